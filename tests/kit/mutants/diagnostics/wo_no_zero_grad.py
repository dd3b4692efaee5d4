"""Mutant: the training loop never calls optimizer.zero_grad()."""

# expects: train-no-zero-grad
# ruff: noqa: F405
import torch

from solutions.diagnostics import *  # noqa: F403


def train_recall(model, steps, batch_size=32, lr=3e-3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(steps):
        keys, values, targets = recall_batch(batch_size, generator=gen)
        loss = F.cross_entropy(model(keys, values), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return torch.tensor(losses)


def wo_experiment(steps=300, seed=0):
    curves = {}
    for variant in ("learned", "identity"):
        torch.manual_seed(seed)
        model = RecallModel()
        if variant == "identity":
            fix_wo_to_identity(model.attn)
        curves[variant] = train_recall(model, steps, seed=seed)
    return curves
