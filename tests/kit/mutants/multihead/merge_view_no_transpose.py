"""Mutant: merges with a straight reshape, no transpose."""

# expects: merge-view-no-transpose
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import split_heads

from .attention import scaled_dot_product_attention


def merge_heads(x):
    B, H, T, d_k = x.shape
    return x.reshape(B, T, H * d_k)


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's merge_heads.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
