"""Mutant: the entropy in bits (log2) instead of nats."""

# expects: sqrtdk-entropy-bits
import torch

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / q.size(-1) ** 0.5
    w = scores.softmax(dim=-1)
    entropy = -torch.where(w > 0, w * torch.log2(w), 0.0).sum(dim=-1)
    return entropy.mean(), w.amax(dim=-1).mean()
