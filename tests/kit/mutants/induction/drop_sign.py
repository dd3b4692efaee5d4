"""Mutant: the drop as repeated - first."""

# expects: induction-ablate-sign
# loses: ablation
import torch

from solutions.induction import *  # noqa: F403
from solutions.induction import in_context_losses


def loss_drop(model, tokens, period, ablate=()):
    with torch.no_grad():
        logits, _ = model(tokens, ablate=ablate)
    first, repeated = in_context_losses(logits, tokens, period)
    return repeated - first
