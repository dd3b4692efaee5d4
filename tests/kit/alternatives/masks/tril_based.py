"""Alternative: masks as the complement of tril bands."""

import torch


def causal_mask(L, device=None):
    return ~torch.tril(torch.ones(L, L, dtype=torch.bool, device=device))


def padding_mask(lengths, S):
    lengths = torch.as_tensor(lengths).reshape(-1, 1, 1, 1)
    return torch.arange(S).reshape(1, 1, 1, S) >= lengths


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window={window}: need at least 1")
    ones = torch.ones(L, L, dtype=torch.bool, device=device)
    keep = torch.tril(ones) & torch.triu(ones, diagonal=-(window - 1))
    return ~keep
