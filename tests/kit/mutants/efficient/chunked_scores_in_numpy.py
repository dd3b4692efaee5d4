"""Mutant: the (T, T) scores computed in numpy, all at once, then folded into the online
softmax chunk by chunk: right values, and torch's recorders see only (T, c) pieces of a
tensor that came from numpy; the memory measured from outside the process sees the (T, T).
The trip through numpy also cuts the graph (q.numpy() refuses a q that requires a gradient):
the chunked check charges that, a second mistake of the same line."""

# expects: chunked-peak-memory-quadratic
# loses: chunked, chunked-memory
import math

import torch

from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T = q.size(-2)
    scores = (q.numpy() @ k.transpose(-2, -1).numpy()) / math.sqrt(q.size(-1))  # (..., T, T)
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    rows = torch.arange(T)[:, None]
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        s = torch.from_numpy(scores[..., start:stop].copy())
        if causal:
            s = s.masked_fill(torch.arange(start, stop)[None, :] > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)
        factor = torch.exp(m - m_new)
        l = l * factor + p.sum(dim=-1, keepdim=True)
        acc = acc * factor + p @ v[..., start:stop, :]
        m = m_new
    return acc / l
