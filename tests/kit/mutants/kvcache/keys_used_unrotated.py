"""Mutant: the keys are appended before apply_rotary, and the attention uses what append
returned: the queries are turned, the keys never."""

# expects: kv-keys-used-unrotated
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
        first = 0 if cache is None else cache.length(layer)
        where = first + torch.arange(T)
        k = self.w_k(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        if cache is not None:
            keys, values = cache.append(layer, k, v)
        else:
            keys, values = k, v
        q = self.w_q(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        q, k = apply_rotary(q, where, self.base), apply_rotary(k, where, self.base)
        future = torch.arange(keys.size(2))[None, :] > where[:, None]
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(keys, self.n_rep), repeat_kv(values, self.n_rep), future
        )
        return self.w_o(heads.transpose(1, 2).flatten(2))


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
