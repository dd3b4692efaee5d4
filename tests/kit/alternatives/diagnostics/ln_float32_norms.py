"""Alternative (issue 16 false fail): layer_gradient_norms returns float32 norms whatever the
stack's dtype (the docstring names no dtype), from torch.linalg.vector_norm over the
concatenated gradients; compare_ln_placement copies the weights block by block and draws x
and target in one call."""

import torch
from torch import nn

from solutions.diagnostics import *  # noqa: F403


def layer_gradient_norms(blocks, x, target, final_norm=None):
    for block in blocks:
        for p in block.parameters():
            p.grad = None
    out = x
    for block in blocks:
        out, _ = block(out)
    if final_norm is not None:
        out = final_norm(out)
    torch.nn.functional.mse_loss(out, target).backward()
    norms = []
    for block in blocks:
        grads = torch.cat([p.grad.flatten() for p in block.parameters() if p.grad is not None])
        norms.append(torch.linalg.vector_norm(grads).float())
    return torch.stack(norms)


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    from .blocks import TransformerBlock

    torch.manual_seed(seed)
    pre = [TransformerBlock(d_model, num_heads, d_ff, norm_first=True) for _ in range(num_layers)]
    post = []
    for block in pre:
        twin = TransformerBlock(d_model, num_heads, d_ff, norm_first=False)
        twin.load_state_dict(block.state_dict())
        post.append(twin)
    x, target = torch.randn(2, batch, seq_len, d_model).unbind(0)
    return {
        "pre_ln": layer_gradient_norms(pre, x, target, final_norm=nn.LayerNorm(d_model)),
        "post_ln": layer_gradient_norms(post, x, target),
    }
