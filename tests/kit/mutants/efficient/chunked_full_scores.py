"""Mutant: exact, but every (T, T) score at once: no memory saved."""

# expects: chunked-quadratic-memory
# loses: chunked-memory, chunked-memory-inside
import torch

from solutions.efficient import linear_attention, local_attention, strided_attention


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    if causal:
        T = q.size(-2)
        s = s.masked_fill(torch.arange(T)[None, :] > torch.arange(T)[:, None], float("-inf"))
    return s.softmax(dim=-1) @ v
