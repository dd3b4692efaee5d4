"""Mutant: eps hard-coded to 1e-5, whatever the caller passes."""

# expects: ln-eps-ignored
# loses: layer-norm-eps
import torch

from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + 1e-5)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
