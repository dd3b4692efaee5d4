"""Mutant: query 0 counted in the previous-token mean (a sum over T-1 entries divided by T).

head_scores calls it: the right tables but for this score are exempt there (charged once)."""

# expects: induction-prev-includes-first
# loses: previous-token
import torch

from solutions.induction import *  # noqa: F403


def previous_token_scores(weights):
    T = weights.size(-1)
    below = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)
    return below.sum(dim=-1).mean(dim=0) / T
