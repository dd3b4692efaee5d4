"""Mutant: the scaled scores are divided by d_k, not √d_k."""

# expects: sqrtdk-divides-by-d_k
import torch

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / q.size(-1)
    w = scores.softmax(dim=-1)
    return -torch.special.xlogy(w, w).sum(dim=-1).mean(), w.amax(dim=-1).mean()
