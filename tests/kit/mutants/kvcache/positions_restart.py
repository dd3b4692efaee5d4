"""Mutant: every call rotates its tokens at positions 0 .. T-1, whatever the cache holds
(the mask still uses the right positions)."""

# expects: kv-positions-restart
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
        p0 = 0 if cache is None else cache.length(layer)
        turn = torch.arange(T)  # restarts at 0 on every call
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, turn, self.base), apply_rotary(k, turn, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        mask = torch.arange(k.size(2))[None, :] > (p0 + torch.arange(T))[:, None]
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
