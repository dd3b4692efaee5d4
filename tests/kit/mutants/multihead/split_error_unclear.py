"""Mutant: a ValueError that says nothing."""

# expects: split-error-unclear
# loses: split-error
from solutions.multihead import MultiHeadAttention, merge_heads
from solutions.multihead import split_heads as _split_heads


def split_heads(x, num_heads):
    if x.size(-1) % num_heads != 0:
        raise ValueError("bad input")
    return _split_heads(x, num_heads)
