"""Mutant: a band centred on the query, |i - j| < window: the future leaks in."""

# expects: local-not-causal
import torch

from solutions.attention import scaled_dot_product_attention
from solutions.efficient import chunked_attention, linear_attention, strided_attention


def local_attention(q, k, v, window):
    T = q.size(-2)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return scaled_dot_product_attention(q, k, v, mask=(i - j).abs() >= window)
