"""Mutant: the whole diagonal at offset -(P-1), which starts at query P-1 of the first half."""

# expects: induction-ind-includes-first-half
# loses: induction
import torch

from solutions.induction import *  # noqa: F403


def induction_scores(weights, period):
    diagonal = torch.diagonal(weights, offset=-(period - 1), dim1=-2, dim2=-1)
    return diagonal.mean(dim=(0, 2))
