"""Mutant: Adds the bias to the probabilities."""

# expects: bias-after-softmax
import math

import torch

from solutions.attention import scaled_dot_product_attention


def attention_with_bias(q, k, v, bias, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1) + bias
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
