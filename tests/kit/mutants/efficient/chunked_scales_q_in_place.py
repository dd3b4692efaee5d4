"""Mutant: scales the queries in place (q.mul_(1 / √d)) before the online softmax: the right
values, but the caller's q is scaled after the call, and autograd refuses the in-place change
of a tensor that requires a gradient. Charged once, as changed-input; before the probes gave
each call its own copies, the next calls got the scaled q and it lost five checks under other
names (wrong scale, chunk-size dependence, shift invariance, the measured run, the recorder).
The chunked attention itself is the solution's (on q as it was)."""

# expects: changed-input
# loses: chunked
import math

from solutions.efficient import chunked_attention as _chunked
from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    scale = math.sqrt(q.size(-1))
    q.mul_(1.0 / scale)  # the caller's q, scaled in place
    return _chunked(q * scale, k, v, causal=causal, chunk_size=chunk_size)
