"""Mutant: the mean square over the first dimension, not the features."""

# expects: rms-norm-wrong-dim
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    y = x / torch.sqrt(x.pow(2).mean(dim=0, keepdim=True) + eps)
    return y if weight is None else y * weight
