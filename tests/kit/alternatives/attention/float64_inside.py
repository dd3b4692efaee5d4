"""Alternative: computes in float64 and casts back to the input dtype."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1).nan_to_num(nan=0.0)
    return (weights @ v).to(dtype), weights.to(dtype)


def attention_with_bias(q, k, v, bias, mask=None):
    dtype = q.dtype
    scores = (q.double() @ k.double().mT) / q.shape[-1] ** 0.5 + bias.double()
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1).nan_to_num(nan=0.0)
    return (weights @ v.double()).to(dtype), weights.to(dtype)
