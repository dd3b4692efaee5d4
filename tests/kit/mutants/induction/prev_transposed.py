"""Mutant: the diagonal above the main one, weights[i, i+1]: query and key swapped."""

# expects: induction-prev-transposed
# loses: previous-token
from solutions.induction import *  # noqa: F403


def previous_token_scores(weights):
    return weights.diagonal(1, -2, -1).mean(dim=(0, 2))
