"""Mutant: classify_heads judges all-zero rows too (entropy 0), which pull a head towards
"collapsed"; a head with only zero rows is "collapsed" instead of "fine". No input had
zero rows with room to attend, so it kept its points."""

# expects: classify-keeps-zero-rows
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
    judged = n >= 2  # all-zero rows judged too
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
