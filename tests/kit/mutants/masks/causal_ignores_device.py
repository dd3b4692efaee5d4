"""Mutant: causal_mask builds the mask on the CPU whatever device it is given."""

# expects: wrong-device
# loses: causal-device
import torch

from solutions.masks import padding_mask, sliding_window_mask


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool).triu(diagonal=1)
