"""Trusted attention, from torch.nn.functional.scaled_dot_product_attention.

F.scaled_dot_product_attention returns no weights; attending over the identity matrix as
values returns them (weights @ I = weights). Its float attn_mask is added to the scaled
scores, which is exactly our bias; our bool mask (True = blocked) becomes -inf there.
"""

import torch
import torch.nn.functional as F


def broadcast_shape(*shapes):
    """torch.broadcast_shapes, without its first-call import of sympy (about a second, which
    would otherwise be charged to the time limit of whichever check first calls this)."""
    ndim = max(len(s) for s in shapes)
    out = []
    for dims in zip(*((1,) * (ndim - len(s)) + tuple(s) for s in shapes), strict=True):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class AttentionWeights(torch.autograd.Function):
    """The identity, whose output autograd keeps for the backward pass, as it keeps a
    softmax's: code that changes the weights in place afterwards (nn.Dropout(inplace=True),
    weights.mul_) then fails its backward pass here as it does on the student's own
    softmax attention, instead of training on weights autograd never saved."""

    @staticmethod
    def forward(ctx, weights):
        kept = weights.clone()
        ctx.save_for_backward(kept)
        return kept

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 (autograd's check that nothing changed them in place)
        return grad


def attention_with_bias(q, k, v, bias, mask=None):
    L, S = q.size(-2), k.size(-2)
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    additive = torch.zeros(*batch, L, S, dtype=q.dtype, device=q.device)
    if bias is not None:
        additive = additive + bias
    blocked_rows = None
    if mask is not None:
        blocked_rows = mask.all(dim=-1, keepdim=True)
        # Rows with every key blocked attend normally here and are zeroed below (no NaN).
        additive = additive.masked_fill(mask & ~blocked_rows, float("-inf"))
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    eye = torch.eye(S, dtype=q.dtype, device=q.device).expand(*batch, S, S)
    weights = AttentionWeights.apply(F.scaled_dot_product_attention(q, k, eye, attn_mask=additive))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    if blocked_rows is not None:
        weights = weights.masked_fill(blocked_rows, 0.0)
        out = out.masked_fill(blocked_rows, 0.0)
    return out, weights


def scaled_dot_product_attention(q, k, v, mask=None):
    return attention_with_bias(q, k, v, None, mask)
