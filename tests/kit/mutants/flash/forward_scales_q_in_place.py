"""Mutant: flash_forward scales the caller's queries in place (q.mul_(1 / √d)) before its tiles:
the right out and lse, but the caller's q is scaled after the call (a layer's projected queries,
or the q a FlashAttention Function saved for its backward pass). Charged once, as
changed-input, in the forward check, which watches its first call; before each call got its
own copies, the next calls got the scaled q and it lost forward, forward-lse and
forward-large-logits as "scaled by d" and "not shift-invariant"."""

# expects: changed-input
# loses: forward
import math

from solutions.flash import FlashAttention, _check_blocks, flash_attention, flash_backward  # noqa: F401
from solutions.flash import flash_forward as _forward


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    d = q.size(-1)
    q.mul_(1.0 / math.sqrt(d))  # the caller's q, scaled
    return _forward(q * math.sqrt(d), k, v, causal, block_q, block_k)
