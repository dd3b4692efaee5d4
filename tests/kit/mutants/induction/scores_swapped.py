"""Mutant: head_scores returns (induction, previous)."""

# expects: induction-scores-swapped
# loses: head-scores
import torch

from solutions.induction import *  # noqa: F403
from solutions.induction import induction_scores, previous_token_scores


def head_scores(model, tokens, period):
    with torch.no_grad():
        _, all_weights = model(tokens)
    previous = torch.stack([previous_token_scores(w) for w in all_weights])
    induction = torch.stack([induction_scores(w, period) for w in all_weights])
    return induction, previous
