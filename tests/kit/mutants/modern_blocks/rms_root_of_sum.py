"""Mutant: divides by the root of the sum of squares (the L2 norm), not of the mean."""

# expects: rms-norm-root-of-sum
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    y = x / torch.sqrt(x.pow(2).sum(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight
