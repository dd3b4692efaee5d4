"""Mutant: the local band is i - j < stride - 1, one key too narrow."""

# expects: stride-off-by-one
import torch

from solutions.attention import scaled_dot_product_attention
from solutions.efficient import chunked_attention, linear_attention, local_attention


def strided_attention(q, k, v, stride):
    T = q.size(-2)
    dist = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    allowed = (dist >= 0) & ((dist < stride - 1) | (dist % stride == 0))
    return scaled_dot_product_attention(q, k, v, mask=~allowed)
