"""Mutant: rotary_attention rotates the values too."""

# expects: rope-rotates-v
# loses: attention, attention-shift
from solutions.rotary import apply_rotary

from .attention import scaled_dot_product_attention


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q, k, v = (apply_rotary(t, positions, base) for t in (q, k, v))
    return scaled_dot_product_attention(q, k, v, mask)
