"""Mutant: p > length: the first padding position is let through."""

# expects: padding-off-by-one
# loses: padding
import torch

from solutions.masks import causal_mask, sliding_window_mask


def padding_mask(lengths, S):
    lengths = torch.as_tensor(lengths)
    return (torch.arange(S) > lengths[:, None])[:, None, None, :]
