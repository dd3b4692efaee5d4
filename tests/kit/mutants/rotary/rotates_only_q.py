"""Mutant: rotary_attention rotates the queries only."""

# expects: rope-rotates-one-side
# loses: attention, attention-shift
from solutions.rotary import apply_rotary

from .attention import scaled_dot_product_attention


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    return scaled_dot_product_attention(apply_rotary(q, positions, base), k, v, mask)
