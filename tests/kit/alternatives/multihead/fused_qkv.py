"""Alternative: one fused QKV product from the same three weights, then chunk."""

import torch
import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D = {D} is not divisible by H = {num_heads}")
    return x.reshape(B, T, num_heads, -1).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        layers = (self.w_q, self.w_k, self.w_v)
        weight = torch.cat([layer.weight for layer in layers])  # (3D, D)
        b = None if self.w_q.bias is None else torch.cat([layer.bias for layer in layers])
        if key is None and value is None:  # self-attention: one product for q, k and v
            q, k, v = F.linear(query, weight, b).chunk(3, dim=-1)
        else:
            key = query if key is None else key
            value = key if value is None else value
            q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        q, k, v = (split_heads(t, self.num_heads) for t in (q, k, v))
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        weights = self.dropout(weights)
        return self.w_o(merge_heads(weights @ v)), weights
