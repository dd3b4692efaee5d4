"""Mutant: interleaves the heads when merging."""

# expects: merge-interleaved
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import split_heads

from .attention import scaled_dot_product_attention


def merge_heads(x):
    B, H, T, d_k = x.shape
    return x.permute(0, 2, 3, 1).reshape(B, T, H * d_k)


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's merge_heads.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
