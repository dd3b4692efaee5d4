"""Mutant: classify_heads judges rows with fewer than 2 allowed keys too (the first row under
a causal mask: entropy 0 over log 2). It was named classify-relative-to-log-s, which it does
not do."""

# expects: classify-keeps-single-key-rows
# loses: classify-heads
import torch

from solutions.diagnostics import *  # noqa: F403


def classify_heads(weights, mask=None, collapsed=0.1, uniform=0.9):
    B, H, L, S = weights.shape
    if mask is None:
        allowed = torch.ones(B, H, L, S, dtype=torch.bool)
    else:
        allowed = ~mask.expand(B, H, L, S)
    n = allowed.sum(dim=-1)
    judged = (weights != 0).any(dim=-1)  # rows with one allowed key judged too
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)
    score = (row / n.clamp_min(2).log() * judged).sum(dim=(0, 2))
    score = score / judged.sum(dim=(0, 2)).clamp_min(1)
    labels = []
    for h in range(H):
        s = float(score[h])
        if not judged[:, h].any():
            labels.append("fine")
        else:
            labels.append("collapsed" if s < collapsed else "uniform" if s > uniform else "fine")
    return labels
