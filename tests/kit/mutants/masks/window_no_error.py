"""Mutant: Never validates the window."""

# expects: window-no-valueerror
# loses: window-errors
import torch

from solutions.masks import causal_mask, padding_mask


def sliding_window_mask(L, window, device=None):
    i = torch.arange(L, device=device)[:, None]
    j = torch.arange(L, device=device)[None, :]
    return (j > i) | (i - j >= window)
