"""Mutant: returns (repeated, first)."""

# expects: induction-loss-swapped
# loses: losses
from solutions.induction import *  # noqa: F403
from solutions.induction import in_context_losses as _reference


def in_context_losses(logits, tokens, period):
    first, repeated = _reference(logits, tokens, period)
    return repeated, first
