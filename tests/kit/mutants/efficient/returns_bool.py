"""Attack as a mutant: every function returns bool tensors of the right shapes, computing
nothing (it used to win 6/18: the comparison cast the reference to bool)."""

# expects: wrong-dtype
# breaks: every exercise
import torch


def _ones(q, v):
    return torch.ones(*q.shape[:-1], v.size(-1), dtype=torch.bool)


def local_attention(q, k, v, window):
    return _ones(q, v), torch.ones(*q.shape[:-1], k.size(-2), dtype=torch.bool)


strided_attention = local_attention


def linear_attention(q, k, v, causal=False, eps=1e-6):
    return _ones(q, v)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    return _ones(q, v)
