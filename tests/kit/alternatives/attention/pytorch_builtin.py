"""Alternative: PyTorch's own F.scaled_dot_product_attention (True = may attend there), the
weights read off by attending over the identity matrix, fully blocked rows zeroed."""

import torch
import torch.nn.functional as F


def attention_with_bias(q, k, v, bias, mask=None):
    L, S = q.size(-2), k.size(-2)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    additive = torch.zeros(*batch, L, S, dtype=q.dtype)
    if bias is not None:
        additive = additive + bias
    empty = None
    if mask is not None:
        empty = mask.all(dim=-1, keepdim=True)
        additive = additive.masked_fill(mask & ~empty, float("-inf"))
    eye = torch.eye(S, dtype=q.dtype).expand(*batch, S, S)
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=additive)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    if empty is not None:
        weights, out = weights.masked_fill(empty, 0.0), out.masked_fill(empty, 0.0)
    return out, weights


def scaled_dot_product_attention(q, k, v, mask=None):
    return attention_with_bias(q, k, v, None, mask)
