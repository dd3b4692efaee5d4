"""Alternative (LN placement): torch.autograd.grad instead of .backward(), so no .grad is
touched at all, and the input and target drawn before the weights."""

import torch
from torch import nn

from solutions.diagnostics import *  # noqa: F403


def layer_gradient_norms(blocks, x, target, final_norm=None):
    out = x
    for block in blocks:
        out = block(out)[0]
    out = out if final_norm is None else final_norm(out)
    loss = ((out - target) ** 2).mean()
    params = [list(block.parameters()) for block in blocks]
    grads = torch.autograd.grad(loss, [p for ps in params for p in ps])
    norms, start = [], 0
    for ps in params:
        flat = torch.cat([g.reshape(-1) for g in grads[start : start + len(ps)]])
        norms.append(flat.norm())
        start += len(ps)
    return torch.stack(norms)


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    from .blocks import TransformerBlock

    gen = torch.manual_seed(seed)
    x, target = torch.randn(2, batch, seq_len, d_model, generator=gen)
    stacks = {}
    for name, norm_first in (("pre_ln", True), ("post_ln", False)):
        stacks[name] = nn.ModuleList(
            [
                TransformerBlock(d_model, num_heads, d_ff, norm_first=norm_first)
                for _ in range(num_layers)
            ]
        )
    stacks["post_ln"].load_state_dict(stacks["pre_ln"].state_dict())
    return {
        "pre_ln": layer_gradient_norms(stacks["pre_ln"], x, target, nn.LayerNorm(d_model)),
        "post_ln": layer_gradient_norms(stacks["post_ln"], x, target),
    }
