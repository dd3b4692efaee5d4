"""Alternative: the solution's cache and layer, with the verbose ValueError messages a careful
student writes: the explanation first, then the shapes (more than 200 characters in all);
greedy_decode with a preallocated token buffer."""

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .gqa import repeat_kv
from .rotary import apply_rotary


class KVCache:
    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers

    def reset(self):
        self.keys = [None] * len(self.keys)
        self.values = [None] * len(self.values)

    def length(self, layer=0):
        k = self.keys[layer]
        return 0 if k is None else int(k.size(2))

    def append(self, layer, k, v):
        if k.dim() != 4 or v.dim() != 4:
            raise ValueError(
                "KVCache.append expects the keys and the values of this call as 4-D tensors "
                "laid out (batch, key/value heads, new tokens, features), one row of features per "
                "token and head, as the attention layer produces them after splitting its heads; "
                f"got k of size {tuple(k.shape)} and v of size {tuple(v.shape)}"
            )
        if k.shape[:3] != v.shape[:3]:
            raise ValueError(
                "KVCache.append: the keys and values of one call must agree in batch size, "
                "number of key/value heads and number of new tokens (dims 0, 1 and 2), because "
                "every value "
                "belongs to exactly one key and the cache stores them side by side; "
                f"got k of size {tuple(k.shape)} and v of size {tuple(v.shape)}"
            )
        old_k, old_v = self.keys[layer], self.values[layer]
        if old_k is not None:
            if (k.size(0), k.size(1), k.size(3)) != (
                old_k.size(0),
                old_k.size(1),
                old_k.size(3),
            ) or (v.size(3) != old_v.size(3)):
                raise ValueError(
                    f"KVCache.append: layer {layer} already holds tokens of another batch size, "
                    "number of key/value heads or width; only the number of tokens (dim 2) may "
                    "grow from one call to the next, so a new sequence needs a new KVCache (or "
                    f"reset()); got k of size {tuple(k.shape)}, cached keys {tuple(old_k.shape)}"
                )
            k = torch.cat([old_k, k], dim=2)
            v = torch.cat([old_v, v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class CachedAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__()
        n_rep, rest = divmod(num_heads, max(num_kv_heads, 1))
        if num_kv_heads < 1 or rest or d_model % num_heads:
            raise ValueError(
                f"need num_kv_heads | num_heads | d_model, got d_model = {d_model}, "
                f"num_heads = {num_heads}, num_kv_heads = {num_kv_heads}"
            )
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)
        self.num_heads, self.num_kv_heads, self.n_rep = num_heads, num_kv_heads, n_rep
        self.d_k, self.base = d_k, base

    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        p0 = 0 if cache is None else cache.length(layer)
        positions = torch.arange(p0, p0 + T, device=x.device)
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        mask = torch.arange(k.size(2), device=x.device)[None, :] > positions[:, None]
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(heads.transpose(1, 2).reshape(B, T, D))


class TinyDecoder(nn.Module):
    """An attention-only decoder: token embedding, num_layers residual CachedAttention layers
    (each after an RMSNorm), a final RMSNorm and the output head. A real model adds a
    feed-forward network after each attention; the cache does not touch it. Given, not an
    exercise: it shows how one KVCache serves every layer.

    forward(tokens (B, T) int64, cache=None) -> logits (B, T, V): with a cache, tokens are the
    T tokens that follow the cached ones.
    """

    def __init__(self, vocab_size, d_model=32, num_heads=4, num_kv_heads=2, num_layers=2,
                 base=10000.0):  # fmt: skip
        super().__init__()
        self.token_embed = nn.Embedding(vocab_size, d_model)
        self.norms = nn.ModuleList(nn.RMSNorm(d_model, eps=1e-6) for _ in range(num_layers))
        self.layers = nn.ModuleList(
            CachedAttention(d_model, num_heads, num_kv_heads, base) for _ in range(num_layers)
        )
        self.norm = nn.RMSNorm(d_model, eps=1e-6)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens, cache=None):
        x = self.token_embed(tokens)
        for i, (norm, layer) in enumerate(zip(self.norms, self.layers, strict=True)):
            x = x + layer(norm(x), cache, i)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    B, T0 = prompt.shape
    tokens = prompt.new_empty(B, T0 + max_new_tokens)
    tokens[:, :T0] = prompt
    cache = KVCache(len(model.layers)) if use_cache else None
    chosen = []
    for i in range(max_new_tokens):
        end = T0 + i
        if use_cache:
            feed = tokens[:, :end] if i == 0 else tokens[:, end - 1 : end]
            logits = model(feed, cache)
        else:
            logits = model(tokens[:, :end])
        last = logits[:, -1, :]
        tokens[:, end] = last.argmax(dim=-1)
        chosen.append(last)
    return tokens, torch.stack(chosen, dim=1)
