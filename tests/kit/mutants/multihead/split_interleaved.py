"""Mutant: gives head h every H-th feature."""

# expects: split-interleaved
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads
from solutions.multihead import split_heads as _split_heads

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    B, H, T, d_k = _split_heads(x, num_heads).shape  # the solution's ValueError and shape
    return x.reshape(B, T, d_k, num_heads).permute(0, 3, 1, 2)


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's split_heads.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
