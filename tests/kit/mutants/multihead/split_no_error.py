"""Mutant: no ValueError in split_heads (reshape fails instead)."""

# expects: split-no-valueerror
# loses: split-error
from solutions.multihead import MultiHeadAttention, merge_heads


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
