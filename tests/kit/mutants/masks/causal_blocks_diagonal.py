"""Mutant: triu(0): a token cannot see itself."""

# expects: causal-blocks-diagonal
# loses: causal
import torch

from solutions.masks import padding_mask, sliding_window_mask


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=0)
