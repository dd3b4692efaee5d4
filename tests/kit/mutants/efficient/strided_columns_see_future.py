"""Mutant: the past test binds to the local band only: dist % stride == 0 also holds for
future keys (dist = -stride, -2 stride, ...), which the strided columns then let through."""

# expects: strided-not-causal
# loses: strided
import torch

from solutions.attention import scaled_dot_product_attention
from solutions.efficient import chunked_attention, linear_attention, local_attention  # noqa: F401


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    T = q.size(-2)
    dist = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    allowed = ((dist >= 0) & (dist < stride)) | (dist % stride == 0)
    return scaled_dot_product_attention(q, k, v, mask=~allowed)
