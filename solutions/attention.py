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

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (scaled_dot_product_attention): about 7 lines.
    #   Goal: softmax(q kᵀ / √d_k) v, where blocked keys get weight exactly 0.
    #   1. Scores: the dot product of every query with every key, divided by √d_k, where d_k
    #      is the width of one query (not the model width).
    #      (..., L, d_k), (..., S, d_k) -> (..., L, S).  Use: @, Tensor.transpose, math.sqrt.
    #   2. Mask (when given): a blocked key's score must be -inf BEFORE the softmax, so that its
    #      weight comes out 0.  Use: Tensor.masked_fill.
    #   3. Weights: a softmax over the keys, so that each query's row sums to 1.  (..., L, S)
    #      Use: torch.softmax (which dim holds the keys?).
    #   4. A query whose keys are all blocked has a row of -inf, and the softmax of that row is
    #      NaN; the docstring promises zeros instead.  Use: Tensor.all, Tensor.masked_fill.
    #   5. Output: each query's weighted sum of the values.
    #      (..., L, S), (..., S, d_v) -> (..., L, d_v).  Return (out, weights).
    ### BEGIN SOLUTION
    d_k = q.size(-1)
    scores = (
        q @ k.transpose(-2, -1) / math.sqrt(d_k)
    )  # (..., L, d_k) x (..., d_k, S) -> (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., L, S), rows sum to 1
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)  # NaN rows -> 0
    out = weights @ v  # (..., L, S) x (..., S, d_v) -> (..., L, d_v)
    return out, weights
    ### END SOLUTION


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

    Differentiable: gradients flow from the output back to q, k, v and bias (nothing in between
    under torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (attention_with_bias): about 7 lines.
    #   Goal: softmax(q kᵀ / √d_k + bias) v: the steps of scaled_dot_product_attention with one
    #   more. The bias is added to the scaled scores, after the division by √d_k and before the
    #   mask and the softmax: it is a preference in log space, and added after the softmax it
    #   would no longer be one. Blocked keys still get weight 0, fully blocked rows zeros.
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5 + bias  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        blocked_rows = mask.all(dim=-1, keepdim=True)  # (..., L, 1)
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(blocked_rows, 0.0)
    return weights @ v, weights
    ### END SOLUTION
