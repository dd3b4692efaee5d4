"""Alternative: each key chunk's step of the online softmax runs under
torch.utils.checkpoint (recomputed in backward instead of kept: the usual way to trade time for
memory when training); the patterns from one boolean mask of allowed offsets; linear attention
with the normaliser as an extra value column. torch.utils.checkpoint's first call imports
torch's compiler stack (~90 MB): the measured checks must not count that import as the
student's memory (the compiler warm-up efficient declares, registry.warm_ups)."""

import math

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _masked(q, k, v, allowed):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
    return w @ v, w


def local_attention(q, k, v, window):
    T = q.size(-2)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    return _masked(q, k, v, (back >= 0) & (back < window))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    T = q.size(-2)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    return _masked(q, k, v, (back >= 0) & ((back < stride) | (back % stride == 0)))


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # the last column sums φ(k)
    if causal:
        kv = (fk.unsqueeze(-1) * v1.unsqueeze(-2)).cumsum(dim=-3)  # (..., T, d, d_v + 1)
        out = (fq.unsqueeze(-2) @ kv).squeeze(-2)
    else:
        out = fq @ (fk.transpose(-2, -1) @ v1)
    return out[..., :-1] / (out[..., -1:] + eps)


def _step(q, k_c, v_c, m, l, acc, first, causal, scale):
    s = q @ k_c.transpose(-2, -1) * scale
    if causal:
        rows = torch.arange(q.size(-2))[:, None]
        cols = torch.arange(first, first + k_c.size(-2))[None, :]
        s = s.masked_fill(cols > rows, float("-inf"))
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    alpha, p = torch.exp(m - m_new), torch.exp(s - m_new)
    return m_new, l * alpha + p.sum(dim=-1, keepdim=True), acc * alpha + p @ v_c


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    for first in range(0, T, chunk_size):
        k_c, v_c = k[..., first : first + chunk_size, :], v[..., first : first + chunk_size, :]
        m, l, acc = checkpoint(
            _step, q, k_c, v_c, m, l, acc, first, causal, 1.0 / math.sqrt(d), use_reentrant=False
        )
    return acc / l
