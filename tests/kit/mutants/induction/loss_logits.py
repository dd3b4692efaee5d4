"""Mutant: the loss read from the raw logits, not log-probabilities.

loss_drop calls it: the right drops but for this loss are exempt there (charged once)."""

# expects: induction-loss-logits
# loses: losses
from solutions.induction import *  # noqa: F403


def in_context_losses(logits, tokens, period):
    loss = -logits[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return loss[:, : period - 1].mean(), loss[:, period:].mean()
