"""Mutant: x.var() with its default Bessel correction (divides by D - 1)."""

# expects: ln-unbiased-variance
# loses: layer-norm
import torch

from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
