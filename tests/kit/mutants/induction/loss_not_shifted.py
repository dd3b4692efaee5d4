"""Mutant: position t scored on token t, not t + 1."""

# expects: induction-loss-not-shifted
# loses: losses
from torch.nn import functional as F

from solutions.induction import *  # noqa: F403


def in_context_losses(logits, tokens, period):
    loss = -F.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1)[:, 1:]
    return loss[:, : period - 1].mean(), loss[:, period:].mean()
