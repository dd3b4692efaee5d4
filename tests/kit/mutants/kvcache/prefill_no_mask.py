"""Mutant: no causal mask ("a single step needs none"), so a prefill's tokens see the tokens
after them."""

# expects: kv-prefill-no-mask
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
        offset = 0 if cache is None else cache.length(layer)
        positions = torch.arange(T) + offset
        q, k, v = (
            w(x).reshape(B, T, -1, self.d_k).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v)
        )
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
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
