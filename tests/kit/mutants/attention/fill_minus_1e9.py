"""Mutant: The -1e9 fill of the seed documents: a fully blocked row becomes uniform."""

# expects: blocked-row-not-zero
import math

import torch

from solutions.attention import attention_with_bias


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
