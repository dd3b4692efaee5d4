"""Mutant: each head to ablate passed as (head, layer)."""

# expects: induction-ablate-swapped
# loses: ablation
import torch

from solutions.induction import *  # noqa: F403
from solutions.induction import in_context_losses


def loss_drop(model, tokens, period, ablate=()):
    with torch.no_grad():
        logits, _ = model(tokens, ablate=[(head, layer) for layer, head in ablate])
    first, repeated = in_context_losses(logits, tokens, period)
    return first - repeated
