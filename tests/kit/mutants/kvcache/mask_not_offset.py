"""Mutant: the causal mask is the (T, S) upper triangle, not shifted by the cached tokens."""

# expects: kv-mask-not-offset
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
        n = cache.length(layer) if cache is not None else 0
        rows = torch.arange(n, n + T)
        q = self.w_q(x).view(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q = apply_rotary(q, rows, self.base)
        k = apply_rotary(k, rows, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        mask = torch.ones(T, k.size(2), dtype=torch.bool).triu(diagonal=1)  # no offset
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(heads.transpose(1, 2).reshape(B, T, D))


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
