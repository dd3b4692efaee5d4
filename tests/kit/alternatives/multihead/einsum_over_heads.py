"""Alternative: the weights seen as (H, d_k, D) blocks, einsum over heads, attention inline."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads:
        raise ValueError(f"d_model={D} not divisible by num_heads={num_heads}")
    return torch.einsum("bthk->bhtk", x.reshape(B, T, num_heads, D // num_heads))


def merge_heads(x):
    B, H, T, d_k = x.shape
    return torch.einsum("bhtk->bthk", x).reshape(B, T, H * d_k)


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

    def _heads(self, linear, x):
        w = linear.weight.view(self.num_heads, self.d_k, self.d_model)  # (H, d_k, D)
        out = torch.einsum("btd,hkd->bhtk", x, w)
        if linear.bias is not None:
            out = out + linear.bias.view(self.num_heads, 1, self.d_k)
        return out

    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        value = key if value is None else value
        q, k, v = (
            self._heads(self.w_q, query),
            self._heads(self.w_k, key),
            self._heads(self.w_v, value),
        )
        scores = torch.einsum("bhlk,bhsk->bhls", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, -math.inf)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        weights = self.dropout(weights)
        heads = torch.einsum("bhls,bhsk->bhlk", weights, v)
        w_o = self.w_o.weight.view(self.d_model, self.num_heads, self.d_k)  # (D, H, d_k)
        out = torch.einsum("bhlk,ehk->ble", heads, w_o)  # sums the heads' contributions
        if self.w_o.bias is not None:
            out = out + self.w_o.bias
        return out, weights
