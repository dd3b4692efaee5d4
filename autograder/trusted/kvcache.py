"""Trusted kvcache, used when another module that imports it is graded.

PyTorch has no KV cache built-in, so this is an implementation of its own
(trusted.NOT_IN_STUDENT_COPY): the cache keeps a list of chunks per layer and concatenates
them on demand; the attention builds its causal mask with tril's diagonal offset and attends
with F.scaled_dot_product_attention (enable_gqa). tests/kit/test_kvcache.py proves it equal
to the solution.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .rotary import apply_rotary


class KVCache:
    def __init__(self, num_layers):
        self.keys, self.values = [None] * num_layers, [None] * num_layers

    def reset(self):
        self.__init__(len(self.keys))

    def length(self, layer=0):
        return 0 if self.keys[layer] is None else int(self.keys[layer].shape[-2])

    def append(self, layer, k, v):
        if k.dim() != 4 or v.dim() != 4 or k.shape[:3] != v.shape[:3]:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must share B, H_kv, T")
        for name, new, old in (("k", k, self.keys[layer]), ("v", v, self.values[layer])):
            if old is not None and (new.shape[:2], new.shape[3]) != (old.shape[:2], old.shape[3]):
                raise ValueError(f"{name} {tuple(new.shape)} does not fit {tuple(old.shape)}")
        if self.keys[layer] is not None:
            k = torch.cat((self.keys[layer], k), dim=-2)
            v = torch.cat((self.values[layer], v), dim=-2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class CachedAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__()
        if num_kv_heads < 1 or num_heads % num_kv_heads or d_model % num_heads:
            raise ValueError(f"sizes {d_model}, {num_heads}, {num_kv_heads} do not divide")
        vars(self).update(num_heads=num_heads, num_kv_heads=num_kv_heads, base=base)
        vars(self).update(d_k=d_model // num_heads, n_rep=num_heads // num_kv_heads)
        widths = {"w_q": d_model, "w_k": self.d_k * num_kv_heads}
        widths.update(w_v=widths["w_k"], w_o=d_model)
        for name, width in widths.items():
            self.add_module(name, nn.Linear(d_model, width, bias=False))

    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        p0 = 0 if cache is None else cache.length(layer)
        positions = p0 + torch.arange(T, device=x.device)
        q = self.w_q(x).view(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        allowed = torch.ones(T, k.shape[-2], dtype=torch.bool, device=x.device).tril(p0)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, D))


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, d_model=32, num_heads=4, num_kv_heads=2, num_layers=2,
                 base=10000.0):  # fmt: skip
        super().__init__()
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.norm = nn.RMSNorm(d_model, eps=1e-6)
        attention = [
            CachedAttention(d_model, num_heads, num_kv_heads, base) for _ in range(num_layers)
        ]
        self.layers = nn.ModuleList(attention)
        self.norms = nn.ModuleList([nn.RMSNorm(d_model, eps=1e-6) for _ in attention])
        self.token_embed = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens, cache=None):
        h = self.token_embed(tokens)
        for index, (attend, norm) in enumerate(zip(self.layers, self.norms, strict=True)):
            h = attend(norm(h), cache, index) + h
        return self.lm_head(self.norm(h))


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers)) if use_cache else None
    tokens, logits = prompt, []
    for _ in range(max_new_tokens):
        step = model(tokens[:, -1:] if use_cache and logits else tokens, cache)[:, -1]
        logits.append(step)
        tokens = torch.cat((tokens, step.argmax(-1, keepdim=True)), dim=1)
    return tokens, torch.stack(logits, dim=1)
