"""Mutant: the largest weight taken over the queries (dim=-2)."""

# expects: sqrtdk-max-over-queries
import torch

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / q.size(-1) ** 0.5
    w = scores.softmax(dim=-1)
    return -torch.special.xlogy(w, w).sum(dim=-1).mean(), w.amax(dim=-2).mean()
