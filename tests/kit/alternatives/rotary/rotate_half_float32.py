"""Alternative: the Hugging Face LLaMA form: full-width cos/sin tables in float32 and
rotate_half; rotary_attention writes its own softmax attention."""

import math

import torch


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x, positions, base=10000.0):
    if x.shape[-1] % 2 == 1:
        raise ValueError(f"rotary embeddings: head dim {x.shape[-1]} must be even")
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = positions.float()[:, None] @ inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return (x * cos) + (rotate_half(x) * sin)


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q, k = apply_rotary(q, positions, base), apply_rotary(k, positions, base)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
