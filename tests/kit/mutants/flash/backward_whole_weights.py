"""Mutant: flash_backward recomputes the weights for all queries and keys at once, from the
saved log-sum-exp: right gradients and nothing of size (T, T) saved, but the (T, T) scores,
weights and their gradients are alive at once in the backward pass."""

# expects: flash-peak-memory-quadratic
# loses: backward-skips-tiles, memory
import math

import torch

from solutions.flash import _check_blocks, flash_forward  # noqa: F401


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    _check_blocks(block_q, block_k)
    scale = 1 / math.sqrt(q.size(-1))
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        T = q.size(-2)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.exp(s - lse[..., None])
    dv = p.transpose(-2, -1) @ grad_out
    D = (grad_out * out).sum(dim=-1, keepdim=True)
    ds = p * (grad_out @ v.transpose(-2, -1) - D) * scale
    return ds @ k, ds.transpose(-2, -1) @ q, dv


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
        return dq, dk, dv, None, None, None


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
