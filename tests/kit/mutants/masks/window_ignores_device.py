"""Mutant: sliding_window_mask drops its device argument."""

# expects: wrong-device
# loses: window-device
import torch

from solutions.masks import causal_mask, padding_mask


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    return (j > i) | (i - j >= window)
