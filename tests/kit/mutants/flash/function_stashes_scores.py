"""Mutant: forward keeps the (T, T) scores alive in a module-level list."""

# expects: flash-keeps-TxT
# loses: saves
import math

import torch

from solutions.flash import _check_blocks, flash_backward, flash_forward  # noqa: F401

_STASH = []


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False, block_q=64, block_k=64):
        out, lse = flash_forward(q, k, v, causal, block_q, block_k)
        _STASH.append(q @ k.transpose(-2, -1))
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.block_q, ctx.block_k = causal, block_q, block_k
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = flash_backward(
            q, k, v, out, lse, grad_out, ctx.causal, ctx.block_q, ctx.block_k
        )
        return dq, dk, dv, None, None, None


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
