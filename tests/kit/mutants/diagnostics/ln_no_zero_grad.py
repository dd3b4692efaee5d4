"""Mutant: layer_gradient_norms never clears .grad, so a second call adds to the first."""

# expects: ln-grad-accumulated
import torch
import torch.nn.functional as F

from solutions.diagnostics import *  # noqa: F403


def layer_gradient_norms(blocks, x, target, final_norm=None):
    h = x
    for block in blocks:
        h, _ = block(h)
    if final_norm is not None:
        h = final_norm(h)
    F.mse_loss(h, target).backward()
    return torch.stack(
        [torch.sqrt(sum(p.grad.pow(2).sum() for p in block.parameters())) for block in blocks]
    )
