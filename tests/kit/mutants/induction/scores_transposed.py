"""Mutant: the tables stacked along dim 1, (H, L): heads as rows."""

# expects: induction-scores-transposed
# loses: head-scores
import torch

from solutions.induction import *  # noqa: F403
from solutions.induction import induction_scores, previous_token_scores


def head_scores(model, tokens, period):
    with torch.no_grad():
        _, all_weights = model(tokens)
    previous = torch.stack([previous_token_scores(w) for w in all_weights], dim=1)
    induction = torch.stack([induction_scores(w, period) for w in all_weights], dim=1)
    return previous, induction
