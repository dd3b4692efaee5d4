"""Alternative: heads folded into the batch axis for torch.bmm, F.linear with the modules'
parameters, functional dropout switched by self.training."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"{D} features are not divisible into {num_heads} heads")
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)  # chunk h = features of head h


def merge_heads(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.num_heads, self.p = num_heads, dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        value = key if value is None else value
        B, L, _ = query.shape
        S, H = key.size(1), self.num_heads
        q, k, v = (
            split_heads(F.linear(t, lin.weight, lin.bias), H).flatten(0, 1)
            for t, lin in ((query, self.w_q), (key, self.w_k), (value, self.w_v))
        )  # (B*H, T, d_k)
        scores = torch.bmm(q, k.transpose(1, 2)).div(math.sqrt(q.size(-1))).view(B, H, L, S)
        if mask is not None:
            mask = mask.expand(B, H, L, S)
            scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = torch.where(mask.all(-1, keepdim=True), 0.0, weights)
        weights = F.dropout(weights, self.p, training=self.training)
        heads = torch.bmm(weights.flatten(0, 1), v).view(B, H, L, -1)
        return F.linear(merge_heads(heads), self.w_o.weight, self.w_o.bias), weights
