"""Mutant: tril() instead of triu(1): the past and the diagonal blocked, the future kept (True
read as "may attend"). At L = 1 it equals triu(0), which blocks the diagonal."""

# expects: causal-transposed
import torch

from solutions.masks import padding_mask, sliding_window_mask  # noqa: F401


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool, device=device).tril()
