"""Mutant: w * log(w), so 0 log 0 is NaN."""

# expects: entropy-nan
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    row = -(weights * weights.log()).sum(dim=-1)
    kept = (weights != 0).any(dim=-1)
    return (row * kept).sum(dim=(0, 2)) / kept.sum(dim=(0, 2)).clamp_min(1)
