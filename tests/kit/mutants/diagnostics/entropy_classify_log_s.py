"""Mutant: classify_heads divides every row's entropy by log S."""

# expects: classify-relative-to-log-s
import math

import torch

from solutions.diagnostics import *  # noqa: F403


def classify_heads(weights, mask=None, collapsed=0.1, uniform=0.9):
    S = weights.size(-1)
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)
    judged = (weights != 0).any(dim=-1)
    if mask is not None:
        judged &= (~mask.expand(weights.shape)).sum(dim=-1) >= 2
    score = (row * judged).sum(dim=(0, 2)) / judged.sum(dim=(0, 2)).clamp_min(1) / math.log(S)
    return ["collapsed" if s < collapsed else "uniform" if s > uniform else "fine" for s in score]
