"""Mutant (slow: a training run): the targets are the inputs, not the next tokens."""

# expects: train-targets-not-shifted
import torch
import torch.nn.functional as F


def train(model, data, steps=300, batch_size=32, seq_len=64, lr=3e-3, generator=None):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)
        x = torch.stack([data[s : s + seq_len] for s in starts])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
