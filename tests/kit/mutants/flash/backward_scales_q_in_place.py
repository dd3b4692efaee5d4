"""Mutant: flash_backward scales the caller's queries in place (q.mul_(1 / √d)) before its
tiles: the right dq, dk and dv, but the caller's q is scaled after the call (the q that a
FlashAttention Function saved, which a second backward pass would read). Charged once, as
changed-input, in the backward check, which watches its first call; every other call gets
its own copies."""

# expects: changed-input
# loses: backward
import math

from solutions.flash import FlashAttention, _check_blocks, flash_attention, flash_forward  # noqa: F401
from solutions.flash import flash_backward as _backward


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    d = q.size(-1)
    q.mul_(1.0 / math.sqrt(d))  # the caller's q, scaled
    return _backward(q * math.sqrt(d), k, v, out, lse, grad_out, causal, block_q, block_k)
