"""Mutant: the values are rotated too (and cached rotated)."""

# expects: rope-rotates-v
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
        p = (0 if cache is None else cache.length(layer)) + torch.arange(T)
        split = [
            f(x).reshape(B, T, -1, self.d_k).transpose(1, 2) for f in (self.w_q, self.w_k, self.w_v)
        ]
        q, k, v = (apply_rotary(t, p, self.base) for t in split)  # v turned as well
        if cache is not None:
            k, v = cache.append(layer, k, v)
        mask = torch.arange(k.size(2))[None, :] > p[:, None]
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
