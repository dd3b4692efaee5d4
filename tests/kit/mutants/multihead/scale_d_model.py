"""Mutant: computes attention inline, dividing by √d_model."""

# expects: mha-wrong-scale
# loses: scale
import math
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads


def scaled_dot_product_attention(q, k, v, mask=None):
    d_model = q.size(1) * q.size(-1)  # H * d_k
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's attention instead of .attention's.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
