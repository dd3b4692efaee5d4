"""Mutant: the causal mask counts each chunk's key positions from 0 (arange(stop - start)), not
from the chunk's start: from query c on, the later chunks' future keys are seen. One chunk of
all the keys is right, so the chunk-size check is not charged for it."""

# expects: chunked-causal-chunk-positions
# loses: chunked, chunked-memory
import math

import torch

from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    q = q * (1.0 / math.sqrt(d))
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    rows = torch.arange(T, device=q.device)[:, None]
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        s = q @ k[..., start:stop, :].transpose(-2, -1)
        if causal:
            cols = torch.arange(stop - start, device=q.device)[None, :]  # from 0, not start
            s = s.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ v[..., start:stop, :]
        m = m_new
    return acc / l
