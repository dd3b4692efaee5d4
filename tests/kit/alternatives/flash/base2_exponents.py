"""Alternative: the online softmax in base 2 (exp2 on scores times log2(e)), as FlashAttention's
kernels do; outputs written into preallocated tensors; the backward pass with query tiles
outside and key tiles inside (dK, dV accumulated in whole tensors)."""

import math

import torch

from solutions.flash import FlashAttention, flash_attention  # noqa: F401

LOG2E = 1.0 / math.log(2.0)


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T, d = q.shape[-2:]
    c = LOG2E / math.sqrt(d)  # scores in base 2: s2 = q·k / √d · log2(e)
    out = q.new_empty((*q.shape[:-1], v.size(-1)))
    lse = q.new_empty(q.shape[:-1])
    for qs in range(0, T, block_q):
        qe = min(qs + block_q, T)
        m2 = q.new_full((*q.shape[:-2], qe - qs), -math.inf)
        l = q.new_zeros((*q.shape[:-2], qe - qs))
        acc = q.new_zeros((*q.shape[:-2], qe - qs, v.size(-1)))
        for ks in range(0, T, block_k):
            if causal and ks >= qe:
                break
            ke = min(ks + block_k, T)
            s2 = torch.matmul(q[..., qs:qe, :], k[..., ks:ke, :].mT) * c
            if causal:
                i = torch.arange(qs, qe, device=q.device)
                j = torch.arange(ks, ke, device=q.device)
                s2 = torch.where(j[None, :] <= i[:, None], s2, -math.inf)
            new = torch.maximum(m2, s2.max(dim=-1).values)
            shrink = torch.exp2(m2 - new)
            w = torch.exp2(s2 - new[..., None])
            l = l * shrink + w.sum(dim=-1)
            acc = acc * shrink[..., None] + torch.matmul(w, v[..., ks:ke, :])
            m2 = new
        out[..., qs:qe, :] = acc / l[..., None]
        lse[..., qs:qe] = (m2 + torch.log2(l)) / LOG2E  # back to natural logarithms
    return out, lse


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be at least 1")
    T, d = q.shape[-2:]
    scale = 1.0 / math.sqrt(d)
    delta = torch.einsum("...td,...td->...t", grad_out, out)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    lse2 = lse * LOG2E
    for qs in range(0, T, block_q):
        qe = min(qs + block_q, T)
        for ks in range(0, qe if causal else T, block_k):
            ke = min(ks + block_k, T)
            s2 = torch.matmul(q[..., qs:qe, :], k[..., ks:ke, :].mT) * (scale * LOG2E)
            if causal:
                i = torch.arange(qs, qe, device=q.device)
                j = torch.arange(ks, ke, device=q.device)
                s2 = torch.where(j[None, :] <= i[:, None], s2, -math.inf)
            p = torch.exp2(s2 - lse2[..., qs:qe, None])
            dv[..., ks:ke, :] += torch.matmul(p.mT, grad_out[..., qs:qe, :])
            dp = torch.matmul(grad_out[..., qs:qe, :], v[..., ks:ke, :].mT)
            ds = p * (dp - delta[..., qs:qe, None]) * scale
            dq[..., qs:qe, :] += torch.matmul(ds, k[..., ks:ke, :])
            dk[..., ks:ke, :] += torch.matmul(ds.mT, q[..., qs:qe, :])
    return dq, dk, dv
