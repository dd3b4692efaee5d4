"""Mutant (slow: a training run): the period never changes (always max_period), so the model
can predict the repeat by looking a fixed distance back, with no induction circuit.

Every other exercise is right: only the training check sees the mistake."""

# expects: induction-no-circuit
import torch
from torch.nn import functional as F

from solutions.induction import *  # noqa: F403
from solutions.induction import repeated_tokens


def train_induction(
    model, steps, batch_size=32, min_period=6, max_period=16, lr=1e-2, generator=None
):
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        tokens = repeated_tokens(batch_size, max_period, model.vocab_size, generator)
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
