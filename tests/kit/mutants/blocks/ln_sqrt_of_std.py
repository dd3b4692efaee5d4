"""Mutant: divides by the square root of the standard deviation (the root taken twice)."""

# expects: ln-divided-by-sqrt-std
# loses: layer-norm, layer-norm-eps
import torch

from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    std = torch.sqrt((x - mean).pow(2).mean(dim=-1, keepdim=True) + eps)
    y = (x - mean) / torch.sqrt(std)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
