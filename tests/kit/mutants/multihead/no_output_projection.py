"""Mutant: forgets w_o."""

# expects: mha-no-output-projection
from types import FunctionType

from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention


class _Forgotten(nn.Linear):
    def forward(self, x):
        return x


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout, bias)
        self.w_o = _Forgotten(d_model, d_model, bias=bias)  # same parameters, never applied

    # The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
