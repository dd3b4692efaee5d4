"""Alternative: FlashAttention-2's loop order, blocks of queries outside and key chunks inside,
causal key chunks after the query block skipped; a finite fill (the dtype's lowest value)
instead of -inf everywhere; the sparse patterns through the kit's own masks and attention;
causal linear attention chunk by chunk, carrying the state (d, d_v) between chunks."""

import math

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .masks import causal_mask, sliding_window_mask


def local_attention(q, k, v, window):
    return scaled_dot_product_attention(q, k, v, mask=sliding_window_mask(q.size(-2), window))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    T = q.size(-2)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    off_pattern = (back >= stride) & (back % stride != 0)
    return scaled_dot_product_attention(q, k, v, mask=causal_mask(T) | off_pattern)


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        return (fq @ (fk.mT @ v)) / (fq @ fk.sum(dim=-2, keepdim=True).mT + eps)
    T, block = q.size(-2), 4
    state = fk.new_zeros(*fk.shape[:-2], fk.size(-1), v.size(-1))  # Σ phi(k_j) v_jᵀ so far
    norm = fk.new_zeros(*fk.shape[:-2], 1, fk.size(-1))  # Σ phi(k_j) so far
    outs = []
    for a in range(0, T, block):
        fqb, fkb, vb = (
            fq[..., a : a + block, :],
            fk[..., a : a + block, :],
            v[..., a : a + block, :],
        )
        inner = (fqb @ fkb.mT).tril()  # (block, block): within the chunk, causal
        num = fqb @ state + inner @ vb
        den = (fqb * norm).sum(dim=-1, keepdim=True) + inner.sum(dim=-1, keepdim=True)
        outs.append(num / (den + eps))
        state, norm = state + fkb.mT @ vb, norm + fkb.sum(dim=-2, keepdim=True)
    return torch.cat(outs, dim=-2)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    low = torch.finfo(q.dtype).min
    blocks = []
    for qa in range(0, T, chunk_size):
        qb = q[..., qa : qa + chunk_size, :] * d**-0.5
        rows = torch.arange(qa, qa + qb.size(-2))[:, None]
        m = torch.full((*qb.shape[:-1], 1), low, dtype=q.dtype)
        l = torch.zeros_like(m)
        acc = torch.zeros(*qb.shape[:-1], v.size(-1), dtype=q.dtype)
        for ka in range(0, min(T, qa + qb.size(-2)) if causal else T, chunk_size):
            s = qb @ k[..., ka : ka + chunk_size, :].mT
            if causal:
                s = s.masked_fill(torch.arange(ka, ka + s.size(-1))[None, :] > rows, low)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            scale = torch.exp(m - m_new)
            l, acc, m = (
                l * scale + p.sum(dim=-1, keepdim=True),
                acc * scale + p @ v[..., ka : ka + chunk_size, :],
                m_new,
            )
        blocks.append(acc / l)
    return torch.cat(blocks, dim=-2)
