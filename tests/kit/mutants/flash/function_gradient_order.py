"""Mutant: backward returns dk, dq, dv."""

# expects: flash-function-gradient-order
# loses: function-backward
import math

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
        dq, dk, dv = flash_backward(
            q, k, v, out, lse, grad_out, ctx.causal, ctx.block_q, ctx.block_k
        )
        return dk, dq, dv, None, None, None


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
