"""Alternative: the most negative finite fill, with fully blocked rows zeroed afterwards."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return _finish(scores, v, mask)


def attention_with_bias(q, k, v, bias, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + bias
    return _finish(scores, v, mask)


def _finish(scores, v, mask):
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * (~mask.all(dim=-1, keepdim=True))
    return weights @ v, weights
