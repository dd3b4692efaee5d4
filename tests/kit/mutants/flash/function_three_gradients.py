"""Mutant: backward returns the three tensor gradients only, not None for causal and the block
sizes: autograd refuses them; the backward check is charged (and the saves advice, 0 points,
names it too)."""

# expects: flash-function-backward-raised
# loses: function-backward, saves
import math  # noqa: F401

import torch

from solutions.flash import _check_blocks, flash_backward, flash_forward  # noqa: F401


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False, block_q=64, block_k=64):
        out, lse = flash_forward(q, k, v, causal, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.block_q, ctx.block_k = causal, block_q, block_k
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        return flash_backward(q, k, v, out, lse, grad_out, ctx.causal, ctx.block_q, ctx.block_k)


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
