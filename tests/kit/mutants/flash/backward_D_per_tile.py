"""Mutant: D is summed over the key tile only."""

# expects: flash-D-per-tile
# loses: backward
import math

import torch

from solutions.flash import FlashAttention, _check_blocks, flash_attention, flash_forward  # noqa: F401


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    _check_blocks(block_q, block_k)
    T, d = q.shape[-2:]
    scale = 1.0 / math.sqrt(d)
    D = (grad_out * out).sum(dim=-1)  # (..., T): D_i = dO_i · O_i = Σ_j P_ij dP_ij
    dq = torch.zeros_like(q)
    dks, dvs = [], []
    for ks in range(0, T, block_k):
        ke = min(ks + block_k, T)
        k_j, v_j = k[..., ks:ke, :], v[..., ks:ke, :]  # (..., bk, d), (..., bk, d_v)
        dk_j, dv_j = torch.zeros_like(k_j), torch.zeros_like(v_j)
        start = (ks // block_q) * block_q if causal else 0  # the query tile that holds key ks
        for qs in range(start, T, block_q):
            qe = min(qs + block_q, T)
            q_i, do_i = q[..., qs:qe, :], grad_out[..., qs:qe, :]
            s = q_i @ k_j.transpose(-2, -1) * scale  # (..., bq, bk)
            if causal and ke - 1 > qs:  # the tile crosses the diagonal
                rows = torch.arange(qs, qe, device=q.device)[:, None]
                cols = torch.arange(ks, ke, device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            p = torch.exp(s - lse[..., qs:qe, None])  # (..., bq, bk): the weights, recomputed
            dv_j += p.transpose(-2, -1) @ do_i  # (..., bk, bq) x (..., bq, d_v)
            dp = do_i @ v_j.transpose(-2, -1)  # (..., bq, d_v) x (..., d_v, bk)
            ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))  # (..., bq, bk)
            dq[..., qs:qe, :] += ds @ k_j * scale  # (..., bq, bk) x (..., bk, d)
            dk_j += ds.transpose(-2, -1) @ q_i * scale  # (..., bk, bq) x (..., bq, d)
        dks.append(dk_j)
        dvs.append(dv_j)
    return dq, torch.cat(dks, dim=-2), torch.cat(dvs, dim=-2)
