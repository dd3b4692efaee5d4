"""Mutant: divides by the mean square, without its square root."""

# expects: rms-norm-no-root
# loses: rms-norm
from solutions.modern_blocks import *  # noqa: F403


def rms_norm(x, weight=None, eps=1e-6):
    y = x / (x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight
