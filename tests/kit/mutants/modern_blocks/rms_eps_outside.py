"""Mutant: eps added outside the square root."""

# expects: rms-norm-eps-outside-sqrt
# loses: rms-norm-eps
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    y = x / (torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + eps)
    return y if weight is None else y * weight
