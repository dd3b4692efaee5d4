"""Alternative: attention written inline in float64, a finite fill (finfo.min) and fully
blocked rows zeroed, as the docstrings allow; split/merge with view + permute."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads:
        raise ValueError(f"cannot split d_model={D} into {num_heads} heads: not divisible")
    return x.view(B, T, num_heads, D // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    B, H, T, d_k = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * d_k)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.num_heads = num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        if key is None:
            key = query
        if value is None:
            value = key
        q = split_heads(self.w_q(query), self.num_heads).double()
        k = split_heads(self.w_k(key), self.num_heads).double()
        v = split_heads(self.w_v(value), self.num_heads)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights * (~mask.all(dim=-1, keepdim=True))  # nothing to attend: zeros
        weights = self.dropout(weights.to(v.dtype))
        return self.w_o(merge_heads(torch.matmul(weights, v))), weights
