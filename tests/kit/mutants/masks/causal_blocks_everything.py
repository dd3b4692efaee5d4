"""Mutant: a mask that blocks every key is causal, but sees nothing of the past either."""

# expects: causal-blocks-past
# loses: causal, causal-invariance
import torch

from solutions.masks import padding_mask, sliding_window_mask


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool, device=device)
