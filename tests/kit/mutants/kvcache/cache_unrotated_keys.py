"""Mutant: the other convention: the cache holds the keys before rotation, and every call
rotates all cached keys at 0 .. S-1. The outputs are right; the cache breaks the kit's
convention (keys cached after rotation)."""

# expects: kv-cache-unrotated-keys
# loses: cache-contents
from types import FunctionType

import torch

import solutions.kvcache as _s
from solutions.kvcache import *  # noqa: F403

from .attention import scaled_dot_product_attention
from .gqa import repeat_kv
from .rotary import apply_rotary


class CachedAttention(_s.CachedAttention):
    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        p0 = cache.length(layer) if cache else 0
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).permute(0, 2, 1, 3)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).permute(0, 2, 1, 3)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).permute(0, 2, 1, 3)
        if cache is not None:
            k, v = cache.append(layer, k, v)  # raw keys cached
        S = k.size(2)
        q = apply_rotary(q, torch.arange(p0, p0 + T), self.base)
        k = apply_rotary(k, torch.arange(S), self.base)  # every key turned at every call
        mask = torch.ones(T, S, dtype=torch.bool).triu(p0 + 1)
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(B, T, D))


# TinyDecoder, built with this file's CachedAttention (its __init__ run with these globals).
_init = _s.TinyDecoder.__init__
TinyDecoder = type(
    "TinyDecoder",
    (_s.TinyDecoder,),
    {
        "__init__": FunctionType(
            _init.__code__, globals(), None, _init.__defaults__, _init.__closure__
        )
    },
)
