"""Alternative: torch.full / torch.where / logical ops, and the device taken by .to()."""

import torch


def causal_mask(L, device=None):
    return torch.full((L, L), True).triu(1).to(device)


def padding_mask(lengths, S):
    if not torch.is_tensor(lengths):
        lengths = torch.tensor(lengths, dtype=torch.long)
    positions = torch.arange(S).expand(lengths.numel(), S)
    blocked = torch.where(positions < lengths.unsqueeze(-1), False, True)
    return blocked.unsqueeze(1).unsqueeze(1)


def sliding_window_mask(L, window, device=None):
    if window < 1:
        raise ValueError(f"a window of {window} keys is empty")
    i = torch.arange(L, device=device).unsqueeze(-1)
    j = torch.arange(L, device=device).unsqueeze(0)
    visible = torch.logical_and(j <= i, j > i - window)
    return torch.logical_not(visible)
