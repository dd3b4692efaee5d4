"""Alternative: explicit Python loops over batch rows and queries, exp/sum by hand."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    bias = torch.zeros((), dtype=q.dtype)
    return attention_with_bias(q, k, v, bias, mask)


def attention_with_bias(q, k, v, bias, mask=None):
    L, S = q.shape[-2], k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:]) for t in (q, k, v))
    full = torch.broadcast_shapes((*batch, L, S), bias.shape)
    bias = bias.expand(full).reshape(-1, L, S)
    blocked = None
    if mask is not None:
        blocked = mask.expand(full).reshape(-1, L, S)
    outs, all_weights = [], []
    for b in range(q.shape[0]):
        rows_out, rows_w = [], []
        for i in range(L):
            s = (k[b] @ q[b, i]) / math.sqrt(q.shape[-1]) + bias[b, i]
            allowed = torch.ones(S, dtype=torch.bool) if blocked is None else ~blocked[b, i]
            w = torch.zeros(S, dtype=q.dtype)
            if allowed.any():
                e = torch.exp(s[allowed] - s[allowed].max())
                w[allowed] = e / e.sum()
            rows_w.append(w)
            rows_out.append(w @ v[b])
        outs.append(torch.stack(rows_out))
        all_weights.append(torch.stack(rows_w))
    out = torch.stack(outs).reshape(*batch, L, v.shape[-1])
    return out, torch.stack(all_weights).reshape(*batch, L, S)
