"""Alternative: the running state is the log-sum-exp itself, merged with torch.logaddexp, and
the running output is kept normalised (no division at the end); einsum everywhere; the Function
keeps its settings in one tuple and saves the tensors in another order."""

import math

import torch


def _tile_scores(q, k, qs, qe, ks, ke, causal):
    s = torch.einsum("...id,...jd->...ij", q[..., qs:qe, :], k[..., ks:ke, :])
    s = s / math.sqrt(q.size(-1))
    if causal and ke > qs + 1:
        future = (
            torch.arange(ks, ke, device=q.device)[None, :]
            > torch.arange(qs, qe, device=q.device)[:, None]
        )
        s = s.masked_fill(future, -math.inf)
    return s


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T = q.size(-2)
    outs, lses = [], []
    for qs in range(0, T, block_q):
        qe = min(qs + block_q, T)
        lse = None
        o = None
        for ks in range(0, T, block_k):
            if causal and ks > qe - 1:
                continue
            ke = min(ks + block_k, T)
            s = _tile_scores(q, k, qs, qe, ks, ke, causal)
            tile_lse = torch.logsumexp(s, dim=-1)  # (..., bq); -inf for a row the tile hides
            w = torch.exp(s - tile_lse[..., None]).nan_to_num(0.0)  # such a row weighs 0
            tile_o = torch.einsum("...ij,...jd->...id", w, v[..., ks:ke, :])
            if lse is None:
                lse, o = tile_lse, tile_o
                continue
            new = torch.logaddexp(lse, tile_lse)
            o = torch.exp(lse - new)[..., None] * o + torch.exp(tile_lse - new)[..., None] * tile_o
            lse = new
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T = q.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1))
    D = torch.einsum("...id,...id->...i", grad_out, out)
    dq_parts = [torch.zeros_like(q[..., qs : qs + block_q, :]) for qs in range(0, T, block_q)]
    dk, dv = [], []
    for ks in range(0, T, block_k):
        ke = min(ks + block_k, T)
        dk_j = torch.zeros_like(k[..., ks:ke, :])
        dv_j = torch.zeros_like(v[..., ks:ke, :])
        for n, qs in enumerate(range(0, T, block_q)):
            qe = min(qs + block_q, T)
            if causal and qe - 1 < ks:
                continue
            p = torch.exp(_tile_scores(q, k, qs, qe, ks, ke, causal) - lse[..., qs:qe, None])
            g = grad_out[..., qs:qe, :]
            dv_j = dv_j + torch.einsum("...ij,...id->...jd", p, g)
            ds = p * (torch.einsum("...id,...jd->...ij", g, v[..., ks:ke, :]) - D[..., qs:qe, None])
            dq_parts[n] = dq_parts[n] + scale * torch.einsum(
                "...ij,...jd->...id", ds, k[..., ks:ke, :]
            )
            dk_j = dk_j + scale * torch.einsum("...ij,...id->...jd", ds, q[..., qs:qe, :])
        dk.append(dk_j)
        dv.append(dv_j)
    return torch.cat(dq_parts, dim=-2), torch.cat(dk, dim=-2), torch.cat(dv, dim=-2)


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False, block_q=64, block_k=64):
        out, lse = flash_forward(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
        ctx.save_for_backward(lse, out, q, k, v)
        ctx.settings = (causal, block_q, block_k)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        lse, out, q, k, v = ctx.saved_tensors
        causal, block_q, block_k = ctx.settings
        grads = flash_backward(q, k, v, out, lse, grad_out.contiguous(), causal, block_q, block_k)
        return (*grads, None, None, None)


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
