"""Mutant: splits with a straight view to (B, H, T, d_k), no transpose."""

# expects: split-view-no-transpose
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads
from solutions.multihead import split_heads as _split_heads

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    B, H, T, d_k = _split_heads(x, num_heads).shape  # the solution's ValueError and shape
    return x.reshape(B, num_heads, T, d_k)


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's split_heads.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
