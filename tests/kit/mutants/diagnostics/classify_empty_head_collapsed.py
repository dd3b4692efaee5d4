"""Mutant: a head with no row to judge gets score 0, so "collapsed" (the docstring says
"fine"). No input had such a head, so it kept its points."""

# expects: classify-wrong-labels
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
    judged = (n >= 2) & (weights != 0).any(dim=-1)
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)
    score = (row / n.clamp_min(2).log() * judged).sum(dim=(0, 2))
    score = score / judged.sum(dim=(0, 2)).clamp_min(1)
    labels = []
    for h in range(H):
        s = float(score[h])  # a head with nothing judged scores 0: "collapsed"
        labels.append("collapsed" if s < collapsed else "uniform" if s > uniform else "fine")
    return labels
