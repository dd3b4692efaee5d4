"""Alternative: plain Python loops over queries and layers, in float64; torch.topk for the
heads; the loop's loss from log_softmax and nll_loss."""

import torch
from torch.nn import functional as F

from solutions.induction import *  # noqa: F403


def repeated_tokens(batch_size, period, vocab_size, generator=None):
    first = torch.randint(vocab_size, (batch_size, period), generator=generator)
    out = torch.empty(batch_size, 2 * period, dtype=torch.int64)
    out[:, :period] = first
    out[:, period:] = first
    return out


def previous_token_scores(weights):
    T = weights.size(-1)
    total = sum(weights[:, :, i, i - 1].double() for i in range(1, T))
    return (total / (T - 1)).mean(dim=0).to(weights.dtype)


def induction_scores(weights, period):
    total = sum(weights[:, :, i, i - period + 1].double() for i in range(period, 2 * period))
    return (total / period).mean(dim=0).to(weights.dtype)


def head_scores(model, tokens, period):
    with torch.no_grad():
        _, all_weights = model(tokens)
    rows = [(previous_token_scores(w), induction_scores(w, period)) for w in all_weights]
    return torch.stack([p for p, _ in rows]), torch.stack([i for _, i in rows])


def find_heads(previous, induction):
    best = None
    for layer in range(1, induction.size(0)):
        for head in range(induction.size(1)):
            if best is None or induction[layer, head] > induction[best]:
                best = (layer, head)
    flat = previous[: best[0]].flatten()
    index = int(torch.topk(flat, 1).indices[0])
    return best, (index // previous.size(1), index % previous.size(1))


def in_context_losses(logits, tokens, period):
    logp = F.log_softmax(logits.double(), dim=-1)
    first = [-logp[:, t, tokens[:, t + 1]].diagonal() for t in range(period - 1)]
    repeated = [-logp[:, t, tokens[:, t + 1]].diagonal() for t in range(period, 2 * period - 1)]
    return torch.stack(first).mean().float(), torch.stack(repeated).mean().float()


def train_induction(
    model, steps, batch_size=32, min_period=6, max_period=16, lr=1e-2, generator=None
):
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        period = int(torch.randint(min_period, max_period + 1, (), generator=generator))
        tokens = repeated_tokens(batch_size, period, model.vocab_size, generator)
        logits = model(tokens)[0]
        logp = F.log_softmax(logits[:, :-1], dim=-1)
        loss = F.nll_loss(logp.reshape(-1, logp.size(-1)), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses
