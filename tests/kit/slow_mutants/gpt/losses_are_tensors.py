"""Mutant (slow: a training run): losses.append(loss), not loss.item(): a list of tensors,
each holding its step's whole graph, where the docstring promises floats."""

# expects: train-wrong-return
import torch
import torch.nn.functional as F


def train(model, data, steps=300, batch_size=32, seq_len=64, lr=3e-3, generator=None):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)
        x = torch.stack([data[s : s + seq_len] for s in starts])
        y = torch.stack([data[s + 1 : s + seq_len + 1] for s in starts])
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
