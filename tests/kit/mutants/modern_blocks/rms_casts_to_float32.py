"""Mutant: rms_norm computes in float32 and returns float32 (x.float(), never cast back):
float64 inputs give float32 outputs, where the docstring promises x's dtype."""

# expects: wrong-dtype
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    x = x.float()
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight
