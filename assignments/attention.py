# Generated from solutions/attention.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=attention`).
"""Exercise group 1: scaled dot-product attention.

Shape legend: B batch, H heads, L query length, S key length, d_k query/key width,
d_v value width. `...` is any number of leading batch dimensions (none, (B,), (B, H), ...).
Mask convention: a bool tensor, True = blocked; it broadcasts to the scores' shape (..., L, S).
"""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    """Attention(q, k, v) = softmax(q kᵀ / √d_k) v.

    Args:
        q: (..., L, d_k) queries.
        k: (..., S, d_k) keys.
        v: (..., S, d_v) values.
        mask: optional bool tensor broadcastable to (..., L, S); True = blocked.

    Returns:
        out: (..., L, d_v), the weighted sums of the values.
        weights: (..., L, S), each row a probability distribution over the keys.

    Promises: d_k is q.size(-1) (not the model width); a blocked key gets weight exactly 0;
    a row whose keys are all blocked gets zero weights and a zero output, never NaN;
    the dtype of q is kept (float64 in, float64 out).
    """
    # TODO (scaled_dot_product_attention): compute softmax(q kᵀ / √d_k) v, about 7 lines.
    #   1. scores = q @ k.transpose(-2, -1) / math.sqrt(d_k), with d_k = q.size(-1).
    #      Shapes: (..., L, d_k) x (..., d_k, S) -> (..., L, S).
    #   2. If a mask is given: scores.masked_fill(mask, float("-inf")) BEFORE the softmax.
    #   3. weights = torch.softmax(scores, dim=-1): each query's row sums to 1 over the keys.
    #   4. A fully blocked row is all -inf, and its softmax is NaN: set such rows to 0
    #      (mask.all(dim=-1, keepdim=True) finds them).
    #   5. out = weights @ v. Return (out, weights).
    raise NotImplementedError("scaled_dot_product_attention: not attempted yet")


def attention_with_bias(q, k, v, bias, mask=None):
    """Attention with an additive bias on the scores (relative positions, ALiBi, ...).

    weights = softmax(q kᵀ / √d_k + bias), with blocked keys removed before the softmax.

    Args:
        q, k, v: as in scaled_dot_product_attention.
        bias: float tensor broadcastable to (..., L, S), added to the *scaled* scores.
        mask: optional bool tensor broadcastable to (..., L, S); True = blocked.

    Returns:
        (out (..., L, d_v), weights (..., L, S)), with the same promises as
        scaled_dot_product_attention (fully blocked rows give zeros, never NaN).
    """
    # TODO (attention_with_bias): the same steps as scaled_dot_product_attention, plus one:
    #   add `bias` to the scaled scores, after dividing by √d_k and before the mask and the
    #   softmax (a bias added after the softmax is no longer a log-space preference). 7 lines.
    raise NotImplementedError("attention_with_bias: not attempted yet")
