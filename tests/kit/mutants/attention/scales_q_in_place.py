"""Mutant: scales the queries in place (q /= √d_k, then q @ kᵀ): the right values, but the
caller's q is divided by √d_k after the call, and autograd refuses the in-place change of a
tensor that requires a gradient (a layer's projected queries)."""

# expects: changed-input
# loses: reference
import math

import torch

from solutions.attention import attention_with_bias  # noqa: F401


def scaled_dot_product_attention(q, k, v, mask=None):
    q /= math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
