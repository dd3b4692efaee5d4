"""Mutant: records the loss after the update (a second forward pass)."""

# expects: train-loss-after-step
# ruff: noqa: F405
from types import FunctionType

import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import wo_experiment as _wo_experiment


def train_recall(model, steps, batch_size=32, lr=3e-3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(steps):
        keys, values, targets = recall_batch(batch_size, generator=gen)
        loss = F.cross_entropy(model(keys, values), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(keys, values), targets).item())
    return torch.tensor(losses)


# The solution's wo_experiment, run with this file's globals: it calls the train_recall above.
wo_experiment = FunctionType(
    _wo_experiment.__code__, globals(), argdefs=_wo_experiment.__defaults__
)
