"""Mutant: the induction offset one short: key i - P (the earlier occurrence itself)."""

# expects: induction-ind-duplicate
# loses: induction
import torch

from solutions.induction import *  # noqa: F403


def induction_scores(weights, period):
    queries = torch.arange(period, 2 * period)
    return weights[..., queries, queries - period].mean(dim=(0, 2))
