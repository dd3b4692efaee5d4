"""Mutant: rms_norm forgets the weight."""

# expects: rms-norm-weight-ignored
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
