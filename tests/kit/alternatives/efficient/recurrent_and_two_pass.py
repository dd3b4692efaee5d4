"""Alternative: own softmax for the sparse patterns, causal linear attention as a recurrence
(a state S_i = S_{i-1} + phi(k_i) v_iᵀ updated position by position), and chunked attention
in two passes over the key chunks (first the row maxima, then the sums)."""

import math

import torch
import torch.nn.functional as F


def _attend(q, k, v, allowed):
    scores = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.size(-1))
    weights = torch.where(allowed, scores, -torch.inf).softmax(dim=-1)
    return weights @ v, weights


def local_attention(q, k, v, window):
    T = q.size(-2)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    return _attend(q, k, v, (back >= 0) & (back < window))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    T = q.size(-2)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    allowed = (back >= 0) & ((back < stride) | (torch.remainder(back, stride) == 0))
    return _attend(q, k, v, allowed)


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        state = torch.einsum("...jd,...je->...de", fk, v)
        norm = fk.sum(dim=-2)
        num = torch.einsum("...id,...de->...ie", fq, state)
        return num / (torch.einsum("...id,...d->...i", fq, norm)[..., None] + eps)
    state = q.new_zeros(*q.shape[:-1][:-1], q.size(-1), v.size(-1))  # (..., d, d_v)
    norm = q.new_zeros(*q.shape[:-2], q.size(-1))  # (..., d)
    outs = []
    for i in range(q.size(-2)):
        state = state + fk[..., i, :, None] * v[..., i, None, :]
        norm = norm + fk[..., i, :]
        num = (fq[..., i, :, None] * state).sum(dim=-2)
        outs.append(num / ((fq[..., i, :] * norm).sum(dim=-1, keepdim=True) + eps))
    return torch.stack(outs, dim=-2)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T = q.size(-2)
    q = q / math.sqrt(q.size(-1))
    rows = torch.arange(T)[:, None]

    def scores(start):
        s = q @ k[..., start : start + chunk_size, :].transpose(-2, -1)
        if causal:
            cols = torch.arange(start, min(start + chunk_size, T))[None, :]
            s = s.masked_fill(cols > rows, -torch.inf)
        return s

    starts = range(0, T, chunk_size)
    top = torch.stack([scores(a).amax(dim=-1) for a in starts]).amax(dim=0)[..., None]
    total = q.new_zeros(*q.shape[:-1], 1)
    acc = q.new_zeros(*q.shape[:-1], v.size(-1))
    for a in starts:
        p = (scores(a) - top).exp()
        total = total + p.sum(dim=-1, keepdim=True)
        acc = acc + p @ v[..., a : a + chunk_size, :]
    return acc / total
