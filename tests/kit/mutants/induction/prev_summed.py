"""Mutant: the previous-token weights summed over the queries, not averaged."""

# expects: induction-prev-summed
# loses: previous-token
from solutions.induction import *  # noqa: F403


def previous_token_scores(weights):
    return weights.diagonal(-1, -2, -1).sum(dim=-1).mean(dim=0)
