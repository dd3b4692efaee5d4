"""Mutant: attention written inline with -inf and no guard: a fully blocked row is NaN."""

# expects: nan-on-blocked-row
# loses: blocked-row
import math
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadAttention(_Reference):
    # The solution's forward, calling this file's attention instead of .attention's.
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
