"""Alternative: the running values kept in float64 whatever the inputs (cast back at the end),
queries padded to whole tiles and cut at the end, and a Function that computes only the
gradients autograd asks for (ctx.needs_input_grad)."""

import math

import torch
import torch.nn.functional as F


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T, d = q.shape[-2:]
    pad = -T % block_q
    qp = F.pad(q, (0, 0, 0, pad)).double()  # whole query tiles; the extra rows are cut below
    kd, vd = k.double(), v.double()
    out_tiles, lse_tiles = [], []
    for qs in range(0, T + pad, block_q):
        qe = qs + block_q
        m = torch.full(qp.shape[:-2] + (block_q, 1), -math.inf, dtype=torch.float64)
        l = torch.zeros_like(m)
        acc = torch.zeros(qp.shape[:-2] + (block_q, v.size(-1)), dtype=torch.float64)
        last = min(qe, T) if causal else T
        ks = 0
        while ks < last:
            ke = min(ks + block_k, T)
            s = (qp[..., qs:qe, :] @ kd[..., ks:ke, :].transpose(-1, -2)) / math.sqrt(d)
            if causal:
                blocked = torch.arange(ks, ke)[None, :] > torch.arange(qs, qe)[:, None]
                s = torch.where(blocked, torch.tensor(-math.inf, dtype=s.dtype), s)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            l = l * torch.exp(m - m_new) + torch.exp(s - m_new).sum(-1, keepdim=True)
            acc = acc * torch.exp(m - m_new) + torch.exp(s - m_new) @ vd[..., ks:ke, :]
            m = m_new
            ks = ke
        out_tiles.append(acc / l)
        lse_tiles.append(m[..., 0] + torch.log(l[..., 0]))
    out = torch.cat(out_tiles, dim=-2)[..., :T, :]
    lse = torch.cat(lse_tiles, dim=-1)[..., :T]
    return out.to(q.dtype), lse.to(q.dtype)


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T, d = q.shape[-2:]
    qd, kd, vd, od = q.double(), k.double(), v.double(), grad_out.double()
    D = (od * out.double()).sum(-1, keepdim=True)
    dq = torch.zeros_like(qd)
    dk = torch.zeros_like(kd)
    dv = torch.zeros_like(vd)
    for ks in range(0, T, block_k):
        ke = min(ks + block_k, T)
        first = ks - ks % block_q if causal else 0
        for qs in range(first, T, block_q):
            qe = min(qs + block_q, T)
            s = (qd[..., qs:qe, :] @ kd[..., ks:ke, :].transpose(-1, -2)) / math.sqrt(d)
            if causal:
                s = s.masked_fill(
                    torch.arange(ks, ke)[None, :] > torch.arange(qs, qe)[:, None], -math.inf
                )
            p = torch.exp(s - lse[..., qs:qe, None].double())
            dv[..., ks:ke, :] += p.transpose(-1, -2) @ od[..., qs:qe, :]
            ds = p * (od[..., qs:qe, :] @ vd[..., ks:ke, :].transpose(-1, -2) - D[..., qs:qe, :])
            ds = ds / math.sqrt(d)
            dq[..., qs:qe, :] += ds @ kd[..., ks:ke, :]
            dk[..., ks:ke, :] += ds.transpose(-1, -2) @ qd[..., qs:qe, :]
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False, block_q=64, block_k=64):
        out, lse = flash_forward(q, k, v, causal, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal = causal
        ctx.blocks = block_q, block_k
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = flash_backward(q, k, v, out, lse, grad_out, ctx.causal, *ctx.blocks)
        wanted = ctx.needs_input_grad
        return (
            dq if wanted[0] else None,
            dk if wanted[1] else None,
            dv if wanted[2] else None,
            None,
            None,
            None,
        )


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
