"""Mutant: rotary_attention ignores the mask it is given and always masks the future."""

# expects: wrong-values
# loses: attention, attention-shift
import torch

from solutions.attention import scaled_dot_product_attention
from solutions.rotary import apply_rotary


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q = apply_rotary(q, positions, base)
    k = apply_rotary(k, positions, base)
    T = q.size(-2)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return scaled_dot_product_attention(q, k, v, causal)
