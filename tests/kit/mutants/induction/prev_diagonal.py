"""Mutant: the main diagonal (attention to the current token) as the previous-token score."""

# expects: induction-prev-diagonal
# loses: previous-token
import torch

from solutions.induction import *  # noqa: F403


def previous_token_scores(weights):
    return torch.diagonal(weights, dim1=-2, dim2=-1).mean(dim=(0, 2))
