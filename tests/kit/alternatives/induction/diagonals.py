"""Alternative: both scores from torch.diagonal (the induction one drops the diagonal's first
entry, query P-1); the drop from the difference of two masked means of the token losses."""

import torch
from torch.nn import functional as F

from solutions.induction import *  # noqa: F403


def induction_scores(weights, period):
    diagonal = weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)  # queries P-1 .. 2P-1
    return diagonal[..., 1:].mean(dim=-1).mean(dim=0)


def previous_token_scores(weights):
    return weights.diagonal(offset=-1, dim1=2, dim2=3).mean(dim=-1).mean(dim=0)


def loss_drop(model, tokens, period, ablate=()):
    model.eval()
    with torch.inference_mode():
        logits, _ = model(tokens, ablate=list(ablate))
    targets = tokens[:, 1:]
    loss = -F.log_softmax(logits[:, :-1], dim=-1).gather(2, targets.unsqueeze(2))[..., 0]
    position = torch.arange(1, tokens.size(1))  # each entry's target position
    first = loss[:, position < period].mean()
    repeated = loss[:, position > period].mean()
    return first - repeated
