"""Alternative: torch.where instead of masked_fill, scale folded into q."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)
    if mask is not None:
        scores = torch.where(mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
        weights = torch.softmax(scores, dim=-1)
        weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
    else:
        weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_with_bias(q, k, v, bias, mask=None):
    scores = (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1) + bias
    if mask is not None:
        scores = torch.where(mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
    return weights @ v, weights
