"""Mutant: Masks with -inf but never handles fully blocked rows."""

# expects: nan-on-blocked-row
import math

import torch

from solutions.attention import attention_with_bias


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
