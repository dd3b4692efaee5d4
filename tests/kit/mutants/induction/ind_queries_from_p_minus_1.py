"""Mutant: the repeated half's queries start one early (i = P - 1 .. 2P - 2): a mistake with
no name of its own, charged by the induction check alone (head_scores, which uses this
function, is judged given it)."""

# expects: wrong-values
# loses: induction
import torch

from solutions.induction import *  # noqa: F403


def induction_scores(weights, period):
    queries = torch.arange(period - 1, 2 * period - 1)
    return weights[..., queries, queries - period + 1].mean(dim=(0, 2))
