"""Alternative: the cache keeps a list of chunks per layer and concatenates on demand; the
mask is a shifted triangle (triu with diagonal p0 + 1); positions from the cached values;
greedy_decode with a while loop."""

import torch

import solutions.kvcache as _given

from .attention import scaled_dot_product_attention
from .gqa import repeat_kv
from .rotary import apply_rotary


class KVCache:
    def __init__(self, num_layers):
        self.num_layers = num_layers
        self.reset()

    def reset(self):
        self.chunks = [[] for _ in range(self.num_layers)]

    @property
    def keys(self):
        return [torch.cat([c[0] for c in cs], dim=-2) if cs else None for cs in self.chunks]

    @property
    def values(self):
        return [torch.cat([c[1] for c in cs], dim=-2) if cs else None for cs in self.chunks]

    def length(self, layer=0):
        return sum(int(c[1].shape[-2]) for c in self.chunks[layer])

    def append(self, layer, k, v):
        if k.dim() != 4 or v.dim() != 4:
            raise ValueError(f"k and v must be 4-D, got shapes {list(k.shape)} and {list(v.shape)}")
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(f"k {list(k.shape)} and v {list(v.shape)} differ before the width")
        chunks = self.chunks[layer]
        if chunks:
            k0, v0 = chunks[0]
            for new, old in ((k, k0), (v, v0)):
                if new.shape[:2] != old.shape[:2] or new.shape[-1] != old.shape[-1]:
                    raise ValueError(
                        f"shape {list(new.shape)} does not match the cache's {list(old.shape)}"
                    )
        chunks.append((k, v))
        return self.keys[layer], self.values[layer]


class CachedAttention(_given.CachedAttention):  # the given parameters (w_q .. w_o)
    def _heads(self, t, n):
        return t.unflatten(-1, (n, self.d_k)).movedim(2, 1)

    def forward(self, x, cache=None, layer=0):
        T = x.size(1)
        p0 = cache.length(layer) if cache is not None else 0
        positions = torch.arange(T, device=x.device) + p0
        q = apply_rotary(self._heads(self.w_q(x), self.num_heads), positions, self.base)
        k = apply_rotary(self._heads(self.w_k(x), self.num_kv_heads), positions, self.base)
        v = self._heads(self.w_v(x), self.num_kv_heads)
        keys, values = cache.append(layer, k, v) if cache is not None else (k, v)
        S = keys.size(-2)
        mask = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(p0 + 1)
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(keys, self.n_rep), repeat_kv(values, self.n_rep), mask
        )
        return self.w_o(heads.movedim(1, 2).flatten(-2))


class TinyDecoder(_given.TinyDecoder):
    """The given decoder's parameters; the forward pass written here with this file's layers."""

    def __init__(self, vocab_size, *args, **kwargs):
        super().__init__(vocab_size, *args, **kwargs)
        self.layers.apply(lambda m: setattr(m, "__class__", CachedAttention) if
                          isinstance(m, _given.CachedAttention) else None)  # fmt: skip

    def forward(self, tokens, cache=None):
        x = self.token_embed(tokens)
        for i in range(len(self.layers)):
            x = x + self.layers[i](self.norms[i](x), cache, i)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers)) if use_cache else None
    seq, history, fed = prompt.clone(), [], 0
    while len(history) < max_new_tokens:
        logits = model(seq[:, fed:], cache)
        if use_cache:
            fed = seq.size(1)
        history.append(logits[:, -1, :])
        seq = torch.cat((seq, history[-1].argmax(-1)[:, None]), dim=1)
    return seq, torch.stack(history, 1)
