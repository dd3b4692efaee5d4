"""Alternative: every mask from index comparisons; padding from a list comprehension."""

import torch


def causal_mask(L, device=None):
    idx = torch.arange(L, device=device)
    return idx.unsqueeze(0) > idx.unsqueeze(1)


def padding_mask(lengths, S):
    rows = [[p >= int(n) for p in range(S)] for n in lengths]
    return torch.tensor(rows, dtype=torch.bool).view(len(rows), 1, 1, S)


def sliding_window_mask(L, window, device=None):
    if not window >= 1:
        raise ValueError("window must be a positive integer")
    idx = torch.arange(L, device=device)
    distance = idx.unsqueeze(1) - idx.unsqueeze(0)  # i - j
    return (distance < 0) | (distance >= window)
