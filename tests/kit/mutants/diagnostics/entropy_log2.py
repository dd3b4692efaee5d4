"""Mutant: entropy in bits (log2)."""

# expects: entropy-log2
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    row = -(weights * torch.log2(weights.clamp_min(1e-30))).sum(dim=-1)
    kept = (weights != 0).any(dim=-1)
    return (row * kept).sum(dim=(0, 2)) / kept.sum(dim=(0, 2)).clamp_min(1)
