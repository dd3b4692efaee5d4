"""Mutant: Returns (B, S), which does not broadcast against (B, H, L, S)."""

# expects: padding-missing-axes
# loses: padding
import torch

from solutions.masks import causal_mask, sliding_window_mask


def padding_mask(lengths, S):
    lengths = torch.as_tensor(lengths)
    return torch.arange(S) >= lengths[:, None]
