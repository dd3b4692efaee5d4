"""Mutant: the scores filled where the mask is False (~mask), the fully blocked rows zeroed
as the docstring asks: a row the mask leaves open becomes NaN."""

# expects: mask-inverted
# loses: mask-2d
import math

import torch

from solutions.attention import attention_with_bias  # noqa: F401


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
