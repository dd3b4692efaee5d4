"""Mutant (slow: a training run): AdamW with its own default learning rate, not `lr`. The
run still learns (1e-3 is a fine rate here), so the held-out loss alone passed it."""

# expects: train-lr-ignored
import torch
import torch.nn.functional as F


def train(model, data, steps=300, batch_size=32, seq_len=64, lr=3e-3, generator=None):
    optimizer = torch.optim.AdamW(model.parameters())
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
        losses.append(loss.item())
    return losses
