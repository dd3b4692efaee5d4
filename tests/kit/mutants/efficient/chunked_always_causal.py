"""Mutant: the causal mask is applied whatever causal says: causal=False masks the future too."""

# expects: causal-always-applied
# loses: chunked, chunked-memory
import math

import torch

from solutions.efficient import linear_attention, local_attention, strided_attention


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    scale = 1.0 / math.sqrt(d)
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    rows = torch.arange(T, device=q.device)[:, None]
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        s = q @ k[..., start:stop, :].transpose(-2, -1) * scale
        if True:
            cols = torch.arange(start, stop, device=q.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ v[..., start:stop, :]
        m = m_new
    return acc / l
