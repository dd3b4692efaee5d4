"""Mutant: A float 0/1 mask."""

# expects: mask-not-bool
# loses: causal
import torch

from solutions.masks import padding_mask, sliding_window_mask


def causal_mask(L, device=None):
    return torch.ones(L, L, device=device).triu(diagonal=1)
