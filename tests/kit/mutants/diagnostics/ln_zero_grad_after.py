"""Mutant: layer_gradient_norms clears .grad after reading the norms instead of before, so a
second call looks right but gradients already in .grad when it is called are counted. No
input held earlier gradients, so it kept its points."""

# expects: ln-grad-earlier-counted
# loses: ln-gradient-norms
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
    norms = torch.stack(
        [torch.sqrt(sum(p.grad.pow(2).sum() for p in block.parameters())) for block in blocks]
    )
    for block in blocks:
        block.zero_grad()
    return norms
