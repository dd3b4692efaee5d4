"""Alternative: every mask filled in with explicit Python loops (harmless at these sizes)."""

import torch


def causal_mask(L, device=None):
    mask = torch.zeros(L, L, dtype=torch.bool, device=device)
    for i in range(L):
        mask[i, i + 1 :] = True  # the keys after query i
    return mask


def padding_mask(lengths, S):
    lengths = [int(n) for n in lengths]
    mask = torch.zeros(len(lengths), 1, 1, S, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, 0, 0, n:] = True
    return mask


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    mask = torch.ones(L, L, dtype=torch.bool, device=device)
    for i in range(L):
        mask[i, max(0, i - window + 1) : i + 1] = False  # the window keys stay visible
    return mask
