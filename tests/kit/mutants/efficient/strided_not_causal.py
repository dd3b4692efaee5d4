"""Mutant: the pattern without the causal test; Python's % lets the future through."""

# expects: strided-not-causal
import torch

from solutions.attention import scaled_dot_product_attention
from solutions.efficient import chunked_attention, linear_attention, local_attention


def strided_attention(q, k, v, stride):
    T = q.size(-2)
    dist = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    allowed = (dist < stride) | (dist % stride == 0)
    return scaled_dot_product_attention(q, k, v, mask=~allowed)
