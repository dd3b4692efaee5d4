"""Mutant: tril instead of triu: blocks the past."""

# expects: causal-transposed
import torch

from solutions.masks import padding_mask, sliding_window_mask


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool, device=device).tril(diagonal=-1)
