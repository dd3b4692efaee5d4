"""Trusted masks (True = blocked). The causal one comes from nn.Transformer's own helper."""

import torch
from torch import nn


def causal_mask(L, device=None):
    return nn.Transformer.generate_square_subsequent_mask(L, device=device).isinf()


def padding_mask(lengths, S):
    lengths = torch.as_tensor(lengths)
    return (torch.arange(S, device=lengths.device) >= lengths[:, None])[:, None, None, :]


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    far = nn.Transformer.generate_square_subsequent_mask(L, device=device).isinf()
    return far | torch.ones(L, L, dtype=torch.bool, device=device).tril(diagonal=-window)
