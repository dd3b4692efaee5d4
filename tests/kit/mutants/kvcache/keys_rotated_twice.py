"""Mutant: rotated keys are cached, then the whole cache is rotated again at 0 .. S-1 (two
conventions mixed)."""

# expects: kv-keys-rotated-twice
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
        start = cache.length(layer) if cache is not None else 0
        pos = torch.arange(start, start + T)
        q = apply_rotary(self.w_q(x).view(B, T, -1, self.d_k).transpose(1, 2), pos, self.base)
        k = apply_rotary(self.w_k(x).view(B, T, -1, self.d_k).transpose(1, 2), pos, self.base)
        v = self.w_v(x).view(B, T, -1, self.d_k).transpose(1, 2)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        S = k.size(2)
        k = apply_rotary(k, torch.arange(S), self.base)  # the cached keys turned again
        blocked = torch.arange(S)[None, :] > pos[:, None]
        out, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), blocked
        )
        return self.w_o(out.transpose(1, 2).reshape(B, T, D))


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
