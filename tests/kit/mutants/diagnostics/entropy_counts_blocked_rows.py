"""Mutant: the fully blocked rows are averaged in (as entropy 0)."""

# expects: entropy-counts-blocked-rows
import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-1).mean(dim=(0, 2))
