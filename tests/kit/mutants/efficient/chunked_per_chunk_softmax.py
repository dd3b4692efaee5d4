"""Mutant: each chunk gets its own softmax; the chunk outputs are added up."""

# expects: chunked-softmax-per-chunk
# loses: chunked, chunked-memory, chunked-rescale
import torch

from solutions.efficient import linear_attention, local_attention, strided_attention


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    rows = torch.arange(T)[:, None]
    out = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    for start in range(0, T, chunk_size):
        s = q @ k[..., start : start + chunk_size, :].transpose(-2, -1) / d**0.5
        if causal:
            cols = torch.arange(start, min(start + chunk_size, T))[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        w = torch.nan_to_num(s.softmax(dim=-1))  # rows with every key in the future: 0
        out = out + w @ v[..., start : start + chunk_size, :]
    return out
