"""Mutant: causal: every key tile is computed, those above the diagonal masked whole."""

# expects: flash-causal-no-skip
# loses: forward-skips-tiles
import math

import torch

from solutions.flash import FlashAttention, _check_blocks, flash_attention, flash_backward  # noqa: F401


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    _check_blocks(block_q, block_k)
    T, d = q.shape[-2:]
    scale = 1.0 / math.sqrt(d)
    outs, lses = [], []
    for qs in range(0, T, block_q):
        qe = min(qs + block_q, T)
        q_i = q[..., qs:qe, :]  # (..., bq, d)
        m = q.new_full((*q_i.shape[:-1], 1), float("-inf"))  # (..., bq, 1) running max
        l = q.new_zeros((*q_i.shape[:-1], 1))  # (..., bq, 1) running Σ exp(s - m)
        acc = q.new_zeros((*q_i.shape[:-1], v.size(-1)))  # (..., bq, d_v)
        stop = T  # causal: key tiles starting at or after qe are all masked
        for ks in range(0, stop, block_k):
            ke = min(ks + block_k, T)
            s = q_i @ k[..., ks:ke, :].transpose(-2, -1) * scale  # (..., bq, bk)
            if causal and ke - 1 > qs:  # the tile crosses the diagonal
                rows = torch.arange(qs, qe, device=q.device)[:, None]  # (bq, 1) query positions
                cols = torch.arange(ks, ke, device=q.device)[None, :]  # (1, bk) key positions
                s = s.masked_fill(cols > rows, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            alpha = torch.exp(m - m_new)  # rescale what was summed against the old maximum
            p = torch.exp(s - m_new)  # (..., bq, bk), every entry <= 1
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v[..., ks:ke, :]  # (..., bq, bk) x (..., bk, d_v)
            m = m_new
        outs.append(acc / l)
        lses.append((m + torch.log(l)).squeeze(-1))  # (..., bq)
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)
