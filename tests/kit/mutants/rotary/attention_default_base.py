"""Mutant: rotary_attention rotates q and k with the default base, not the base it is given."""

# expects: wrong-values
# loses: attention
from solutions.attention import scaled_dot_product_attention
from solutions.rotary import apply_rotary


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q = apply_rotary(q, positions)
    k = apply_rotary(k, positions)
    return scaled_dot_product_attention(q, k, v, mask)
