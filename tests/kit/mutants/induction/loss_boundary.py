"""Mutant: the repeated half's mean includes target P, the copy's first token."""

# expects: induction-loss-boundary
# loses: losses
from torch.nn import functional as F

from solutions.induction import *  # noqa: F403


def in_context_losses(logits, tokens, period):
    logp = F.log_softmax(logits[:, :-1], dim=-1)
    loss = -logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return loss[:, : period - 1].mean(), loss[:, period - 1 :].mean()
