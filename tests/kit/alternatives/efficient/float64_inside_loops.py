"""Alternative: everything computed in float64 and cast back at the end; the sparse patterns
built with explicit Python loops (harmless at these sizes) and an own softmax; linear
attention by matmul; chunked attention as an online softmax over float64 running sums."""

import math

import torch
import torch.nn.functional as F


def _attend(q, k, v, allowed):
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = torch.matmul(q64, k64.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, -math.inf)
    weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return torch.matmul(weights, v64).to(q.dtype), weights.to(q.dtype)


def _pattern(T, keep):
    allowed = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(i + 1):
            allowed[i, j] = keep(i - j)
    return allowed


def local_attention(q, k, v, window):
    return _attend(q, k, v, _pattern(q.shape[-2], lambda back: back < window))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    keep = lambda back: back < stride or back % stride == 0  # noqa: E731
    return _attend(q, k, v, _pattern(q.shape[-2], keep))


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk, v64 = F.elu(q.double()) + 1, F.elu(k.double()) + 1, v.double()
    if causal:
        state = torch.cumsum(fk.unsqueeze(-1) * v64.unsqueeze(-2), dim=-3)  # (..., T, d, d_v)
        num = torch.matmul(fq.unsqueeze(-2), state).squeeze(-2)
        den = (fq * torch.cumsum(fk, dim=-2)).sum(dim=-1, keepdim=True)
    else:
        num = torch.matmul(fq, torch.matmul(fk.transpose(-1, -2), v64))
        den = torch.matmul(fq, fk.sum(dim=-2).unsqueeze(-1))
    return (num / (den + eps)).to(q.dtype)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    q64, k64, v64 = q.double() / math.sqrt(q.shape[-1]), k.double(), v.double()
    T = q.shape[-2]
    best = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=torch.float64)
    total = torch.zeros(q.shape[:-1] + (1,), dtype=torch.float64)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=torch.float64)
    query = torch.arange(T).unsqueeze(1)
    start = 0
    while start < T:
        stop = min(start + chunk_size, T)
        s = torch.matmul(q64, k64[..., start:stop, :].transpose(-1, -2))
        if causal:
            s = s.masked_fill(torch.arange(start, stop).unsqueeze(0) > query, -math.inf)
        new_best = torch.maximum(best, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - new_best)
        fade = torch.exp(best - new_best)
        total = total * fade + p.sum(dim=-1, keepdim=True)
        acc = acc * fade + torch.matmul(p, v64[..., start:stop, :])
        best, start = new_best, stop
    return (acc / total).to(q.dtype)
