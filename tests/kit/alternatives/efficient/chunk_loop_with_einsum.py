"""Alternative: chunked attention written with einsum and torch.where, the running maximum
updated in place, queries scaled once up front; local and strided attention from one
explicit list of allowed offsets."""

import math

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention


def _by_offsets(q, k, v, keep):
    T = q.size(-2)
    back = torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)
    return scaled_dot_product_attention(q, k, v, mask=~keep(back))


def local_attention(q, k, v, window):
    return _by_offsets(q, k, v, lambda back: (0 <= back) & (back <= window - 1))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    return _by_offsets(
        q, k, v, lambda back: (back >= 0) & ((back < stride) | (back.fmod(stride) == 0))
    )


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q).add(1), F.elu(k).add(1)
    if causal:
        kv = (fk.unsqueeze(-1) * v.unsqueeze(-2)).cumsum(-3)  # (..., T, d, d_v)
        return (fq.unsqueeze(-2) @ kv).squeeze(-2) / (
            (fq * fk.cumsum(-2)).sum(-1, keepdim=True) + eps
        )
    return (fq @ (fk.mT @ v)) / ((fq * fk.sum(-2, keepdim=True)).sum(-1, keepdim=True) + eps)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T = q.size(-2)
    qs = q * (1 / math.sqrt(q.size(-1)))
    m = torch.full_like(q[..., :1], -math.inf)
    l = torch.zeros_like(q[..., :1])
    acc = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    for start in range(0, T, chunk_size):
        kc, vc = k[..., start : start + chunk_size, :], v[..., start : start + chunk_size, :]
        s = torch.einsum("...td,...cd->...tc", qs, kc)
        if causal:
            future = torch.arange(start, start + kc.size(-2)) > torch.arange(T).unsqueeze(-1)
            s = torch.where(future, -math.inf, s)
        m_old = m.clone()
        m = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        scale_old = (m_old - m).exp()
        p = (s - m).exp()
        l = l * scale_old + p.sum(dim=-1, keepdim=True)
        acc = acc * scale_old + torch.einsum("...tc,...ce->...te", p, vc)
    return acc / l
