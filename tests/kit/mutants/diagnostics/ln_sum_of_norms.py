"""Mutant: a block's norm as the sum of its parameters' norms (not one norm over all)."""

# expects: ln-grad-sum-of-norms
# loses: ln-gradient-norms
import torch
import torch.nn.functional as F

from solutions.diagnostics import *  # noqa: F403


def layer_gradient_norms(blocks, x, target, final_norm=None):
    for block in blocks:
        block.zero_grad()
    h = x
    for block in blocks:
        h, _ = block(h)
    if final_norm is not None:
        h = final_norm(h)
    F.mse_loss(h, target).backward()
    return torch.stack([sum(p.grad.norm() for p in block.parameters()) for block in blocks])
