"""Mutant (slow: a training run): gradients are computed but the optimiser never steps."""

# expects: induction-not-trained
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
        period = int(torch.randint(min_period, max_period + 1, (), generator=generator))
        tokens = repeated_tokens(batch_size, period, model.vocab_size, generator)
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        losses.append(loss.item())
    return losses
