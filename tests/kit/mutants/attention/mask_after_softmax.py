"""Mutant: Zeroes blocked weights after the softmax, without renormalising."""

# expects: mask-after-softmax
# loses: mask-2d
import math

import torch

from solutions.attention import attention_with_bias


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ v, weights
