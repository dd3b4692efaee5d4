"""Mutant: layer_gradient_norms drops the final LayerNorm it is given."""

# expects: ln-final-norm-ignored
import torch
import torch.nn.functional as F

from solutions.diagnostics import *  # noqa: F403


def layer_gradient_norms(blocks, x, target, final_norm=None):
    for block in blocks:
        block.zero_grad()
    h = x
    for block in blocks:
        h, _ = block(h)
    F.mse_loss(h, target).backward()
    return torch.stack(
        [torch.sqrt(sum(p.grad.pow(2).sum() for p in block.parameters())) for block in blocks]
    )
