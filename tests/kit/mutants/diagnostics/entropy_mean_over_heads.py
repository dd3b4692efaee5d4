"""Mutant: head_entropy averages over the batch and the heads (dims 0, 1), one value per query
row, instead of over the batch and the rows."""

# expects: entropy-mean-wrong-axes
# loses: entropy-random, entropy-crafted
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)
    kept = (weights != 0).any(dim=-1)
    return (row * kept).sum(dim=(0, 1)) / kept.sum(dim=(0, 1)).clamp_min(1)
