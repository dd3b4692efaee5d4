"""Alternative: windows through unfold, AdamW with set_to_none, losses from detach."""

import torch
import torch.nn.functional as F

from solutions.gpt import CharVocab, MiniGPT, generate, load_corpus


def train(model, data, steps=300, batch_size=32, seq_len=64, lr=3e-3, generator=None):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    windows = data.unfold(0, seq_len + 1, 1)  # (N, seq_len + 1), every window
    model.train()
    history = []
    for _ in range(steps):
        batch = windows[torch.randint(len(windows), (batch_size,), generator=generator)]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return history
