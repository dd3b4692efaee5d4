"""Mutant: eps hard-coded to 1e-6 instead of the eps given."""

# expects: rms-norm-eps-ignored
# loses: rms-norm-eps
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    y = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return y if weight is None else y * weight
