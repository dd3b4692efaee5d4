"""Mutant: scales the queries in place (q.mul_(1 / √d), then the online softmax): the right
values, but the caller's q is scaled after the call, and autograd refuses the in-place change of
a tensor that requires a gradient. Charged once, as changed-input; before the probes gave each
call its own copies, the next calls got the scaled q and it lost five checks under other names
(wrong scale, chunk-size dependence, shift invariance, the measured run, the recorder)."""

# expects: changed-input
# loses: chunked
import math

import torch

from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    q.mul_(1.0 / math.sqrt(d))
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    rows = torch.arange(T, device=q.device)[:, None]
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        s = q @ k[..., start:stop, :].transpose(-2, -1)
        if causal:
            cols = torch.arange(start, stop, device=q.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ v[..., start:stop, :]
        m = m_new
    return acc / l
