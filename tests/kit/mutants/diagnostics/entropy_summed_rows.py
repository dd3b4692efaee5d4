"""Mutant: head_entropy adds up the kept rows' entropies instead of averaging them."""

# expects: entropy-summed-rows
# loses: entropy-random, entropy-crafted
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)
    kept = (weights != 0).any(dim=-1)
    return (row * kept).sum(dim=(0, 2))
