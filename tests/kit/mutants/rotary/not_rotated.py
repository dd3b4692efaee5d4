"""Mutant: rotary_attention forgets to rotate: plain attention."""

# expects: rope-attention-not-rotated
# loses: attention
from solutions.rotary import apply_rotary  # noqa: F401

from .attention import scaled_dot_product_attention


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    return scaled_dot_product_attention(q, k, v, mask)
