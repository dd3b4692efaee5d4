"""Mutant: i - j > window: one key too many."""

# expects: window-off-by-one
# loses: window
import torch

from solutions.masks import causal_mask, padding_mask


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    i = torch.arange(L, device=device)[:, None]
    j = torch.arange(L, device=device)[None, :]
    return (j > i) | (i - j > window)
