"""Mutant: never applies dropout."""

# expects: mha-dropout-ignored
# loses: dropout
from types import FunctionType

from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout, bias)
        self.dropout = nn.Identity()  # the solution's forward then drops nothing

    # The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
