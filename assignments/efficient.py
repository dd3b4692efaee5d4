# Generated from solutions/efficient.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=efficient`).
"""Exercise group 9: efficient attention, and what each shortcut gives up.

Plain attention builds a (T, T) score matrix: its memory grows with the square of the sequence
length. The four exercises here avoid or restrict it in four different ways:

    local_attention     each query sees a window of recent keys       (sparse, causal)
    strided_attention   a local band plus every stride-th key before  (sparse, causal)
    linear_attention    a kernel feature map instead of the softmax   (approximate, O(T))
    chunked_attention   exact softmax attention, one key chunk at a time (online softmax)

Shape legend: B batch, H heads, T sequence length (self-attention: queries and keys are the
same positions), d query/key width, d_v value width. `...` is any number of leading batch
dimensions (none, (B,), (B, H), ...). Mask convention: a bool tensor, True = blocked.
"""

import math

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .masks import sliding_window_mask


def local_attention(q, k, v, window):
    """Causal local (sliding-window) attention: query i sees keys i - window + 1 .. i.

    Args:
        q, k: (..., T, d) queries and keys.  v: (..., T, d_v) values.
        window: how many keys each query may see (itself included), window >= 1.

    Returns:
        out (..., T, d_v) and weights (..., T, T); weights are exactly 0 outside the window,
        so this equals scaled_dot_product_attention under sliding_window_mask(T, window).
    """
    # TODO (local_attention): two lines, reusing what you already wrote.
    #   1. mask = sliding_window_mask(T, window, device=q.device), with T = q.size(-2).
    #   2. return scaled_dot_product_attention(q, k, v, mask=mask).
    raise NotImplementedError("local_attention: not attempted yet")


def strided_attention(q, k, v, stride):
    """Strided sparse attention (Child et al., 2019): a local band plus a strided column set.

    Query i may attend to key j when j <= i (causal) and
        i - j < stride            (the local band: itself and the stride - 1 keys before), or
        (i - j) % stride == 0     (every stride-th key further back: i - stride, i - 2*stride, ...).

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).  stride: an int >= 1.

    Returns:
        out (..., T, d_v) and weights (..., T, T), zero at every blocked key.

    Raises:
        ValueError: when stride < 1.
    """
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    # TODO (strided_attention): build the blocked mask, then attend, about 5 lines.
    #   1. i = torch.arange(T, device=q.device)[:, None] (queries), j = ...[None, :] (keys).
    #   2. dist = i - j, shape (T, T): how far back key j is from query i (negative = future).
    #   3. allowed = (dist >= 0) & ((dist < stride) | (dist % stride == 0)).
    #   4. return scaled_dot_product_attention(q, k, v, mask=~allowed)  (True = blocked).
    raise NotImplementedError("strided_attention: not attempted yet")


def linear_attention(q, k, v, causal=False, eps=1e-6):
    """Linear attention (Katharopoulos et al., 2020) with the feature map phi(x) = elu(x) + 1.

    The softmax's exp(q·k) is replaced by a kernel phi(q)·phi(k) with phi > 0, so the sums over
    keys can be taken once and shared by every query:

        out_i = phi(q_i)ᵀ (Σ_j phi(k_j) v_jᵀ) / (phi(q_i)ᵀ Σ_j phi(k_j) + eps)

    with j over all positions, or over j <= i when causal (running prefix sums). No (T, T)
    tensor is ever built: time and memory grow linearly with T. There is no 1/√d scaling.

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        causal: when True, query i only uses keys j <= i.
        eps: added to the normaliser (which is > 0 anyway, since phi > 0).

    Returns:
        out: (..., T, d_v).
    """
    # TODO (linear_attention): about 9 lines.
    #   1. phi_q = F.elu(q) + 1, phi_k = F.elu(k) + 1: strictly positive features (..., T, d).
    #   2. Not causal:
    #        kv = phi_k.transpose(-2, -1) @ v      (..., d, T) x (..., T, d_v) -> (..., d, d_v)
    #        z  = phi_k.sum(dim=-2)                 (..., d): the sum over the keys
    #        num = phi_q @ kv                       (..., T, d_v)
    #        den = phi_q @ z[..., None]             (..., T, 1)
    #   3. Causal: the same sums, but only over j <= i, as running sums along T:
    #        kv = torch.cumsum(phi_k[..., :, None] * v[..., None, :], dim=-3)  (..., T, d, d_v)
    #        z  = torch.cumsum(phi_k, dim=-2)                                    (..., T, d)
    #        num = (phi_q[..., None] * kv).sum(dim=-2)   den = (phi_q * z).sum(-1, keepdim=True)
    #   4. return num / (den + eps).
    raise NotImplementedError("linear_attention: not attempted yet")


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    """Exact softmax attention, computed over key chunks with an online softmax.

    The result equals softmax(q kᵀ / √d) v (under the causal mask when causal=True), but the
    keys are visited chunk_size at a time, so at most (T, chunk_size) scores exist at once per
    batch and head. For each query row the loop keeps three running values:

        m    the largest score seen so far                                    (..., T, 1)
        l    Σ exp(score - m) over the keys seen so far                       (..., T, 1)
        acc  Σ exp(score - m) v over the keys seen so far                     (..., T, d_v)

    When a new chunk raises the maximum from m to m_new, the old sums were measured against m,
    so both are multiplied by exp(m - m_new) before the chunk's own terms are added. At the end,
    out = acc / l. (This is the heart of FlashAttention, Dao et al., 2022.)

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        causal: when True, query i only attends to keys j <= i.
        chunk_size: keys per chunk, >= 1 (the last chunk may be shorter).

    Returns:
        out: (..., T, d_v), finite even when the scores are in the thousands.
    """
    # TODO (chunked_attention): about 16 lines.
    #   1. T, d = q.shape[-2:]; scale = 1 / math.sqrt(d). Start with
    #      m = torch.full((..., T, 1), -inf), l = zeros (..., T, 1), acc = zeros (..., T, d_v)
    #      (q.new_full(q.shape[:-1] + (1,), float("-inf")) keeps dtype and device).
    #   2. for start in range(0, T, chunk_size):  (the last chunk may be shorter)
    #        s = q @ k[..., start:stop, :].transpose(-2, -1) * scale      (..., T, c)
    #        causal: blocked where key position (start + column) > query position (row);
    #                build that (T, c) mask from two aranges, then s.masked_fill(..., -inf).
    #        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    #        alpha = torch.exp(m - m_new)   # rescales the old sums (0 on the first chunk)
    #        p = torch.exp(s - m_new)        # (..., T, c), never above 1: no overflow
    #        l = l * alpha + p.sum(dim=-1, keepdim=True)
    #        acc = acc * alpha + p @ v[..., start:stop, :]
    #        m = m_new
    #   3. return acc / l.
    #   With causal=True, chunk 0 holds key 0, which every query may see: m is finite after
    #   it, so exp(m - m_new) never meets -inf - (-inf).
    raise NotImplementedError("chunked_attention: not attempted yet")
