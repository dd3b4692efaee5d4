"""Mutant: loss_drop never passes the heads to ablate to the model."""

# expects: induction-ablate-ignored
# loses: ablation
import torch

from solutions.induction import *  # noqa: F403
from solutions.induction import in_context_losses


def loss_drop(model, tokens, period, ablate=()):
    with torch.no_grad():
        logits, _ = model(tokens)
    first, repeated = in_context_losses(logits, tokens, period)
    return first - repeated
