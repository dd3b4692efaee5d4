"""Mutant: A symmetric band: sees the future."""

# expects: window-not-causal
# loses: window
import torch

from solutions.masks import causal_mask, padding_mask


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    i = torch.arange(L, device=device)[:, None]
    j = torch.arange(L, device=device)[None, :]
    return (i - j).abs() >= window
