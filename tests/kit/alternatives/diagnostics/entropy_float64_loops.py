"""Alternative: head_entropy and classify_heads in float64 inside, with explicit loops over
the heads (harmless at these sizes), torch.where for 0 log 0 and masked means; results cast
back to the input's dtype."""

import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    w = weights.double()
    plogp = torch.where(w > 0, w * torch.log(torch.where(w > 0, w, torch.ones_like(w))), 0.0)
    rows = -plogp.sum(-1)  # (B, H, L)
    result = []
    for h in range(w.shape[1]):
        kept = (w[:, h] != 0).any(-1)
        result.append(rows[:, h][kept].mean() if kept.any() else w.new_zeros(()))
    return torch.stack(result).to(weights.dtype)


def classify_heads(weights, mask=None, collapsed=0.1, uniform=0.9):
    w = weights.double()
    B, H, L, S = w.shape
    if mask is None:
        n = torch.full((B, H, L), S)
    else:
        n = (~torch.broadcast_to(mask, w.shape)).sum(-1)
    plogp = torch.where(w > 0, w * torch.log(torch.where(w > 0, w, torch.ones_like(w))), 0.0)
    rows = -plogp.sum(-1)
    labels = []
    for h in range(H):
        judged = (n[:, h] >= 2) & (w[:, h] != 0).any(-1)
        if not judged.any():
            labels.append("fine")
            continue
        ratios = rows[:, h][judged] / n[:, h][judged].double().log()
        score = ratios.mean().item()
        if score < collapsed:
            labels.append("collapsed")
        elif score > uniform:
            labels.append("uniform")
        else:
            labels.append("fine")
    return labels
