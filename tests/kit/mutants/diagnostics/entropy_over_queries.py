"""Mutant: sums w log w over the queries (dim=-2)."""

# expects: entropy-wrong-dim
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    row = -torch.special.xlogy(weights, weights).sum(dim=-2)
    kept = (weights != 0).any(dim=-2)
    return (row * kept).sum(dim=(0, 2)) / kept.sum(dim=(0, 2)).clamp_min(1)
