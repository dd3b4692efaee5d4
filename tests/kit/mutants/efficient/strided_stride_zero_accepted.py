"""Mutant: stride < 1 is quietly treated as stride 1 instead of raising ValueError."""

# expects: strided-stride-not-validated
# loses: strided
from solutions.efficient import chunked_attention, linear_attention, local_attention  # noqa: F401
from solutions.efficient import strided_attention as _strided


def strided_attention(q, k, v, stride):
    return _strided(q, k, v, max(stride, 1))
