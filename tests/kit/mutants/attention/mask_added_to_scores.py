"""Mutant: the bool mask added to the scores as a number (True = 1): a blocked key's score
moves by 1 and it keeps its weight."""

# expects: mask-as-number
# loses: mask-2d
import math

import torch

from solutions.attention import attention_with_bias  # noqa: F401


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores + mask.float()
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
