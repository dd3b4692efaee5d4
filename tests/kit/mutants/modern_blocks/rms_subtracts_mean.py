"""Mutant: subtracts the mean first (that is LayerNorm without its bias)."""

# expects: rms-norm-subtracts-mean
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    x = x - x.mean(dim=-1, keepdim=True)
    y = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight
