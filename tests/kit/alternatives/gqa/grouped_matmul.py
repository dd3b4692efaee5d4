"""Alternative: no copy of the keys at all. The queries are grouped as (B, H_kv, n_rep, T, d_k)
and meet their one key head by broadcasting; attention is computed inline (masked softmax,
fully blocked rows zeroed). repeat_kv indexes with h // n_rep."""

import math

import torch
from torch import nn


def repeat_kv(x, n_rep):
    index = torch.arange(x.size(1) * n_rep, device=x.device) // n_rep
    return x[:, index]


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype):
    k = torch.empty(T, num_kv_heads, d_model // num_heads, dtype=dtype)
    return k.nbytes + torch.empty_like(k).nbytes


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads} (key/value "
                f"heads are shared by equal groups of query heads)"
            )
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        G, d_k = self.num_kv_heads, D // self.num_heads
        n_rep = self.num_heads // G
        q = self.w_q(x).reshape(B, T, G, n_rep, d_k).permute(0, 2, 3, 1, 4)  # (B, G, n, T, d)
        k = self.w_k(x).reshape(B, T, G, 1, d_k).permute(0, 2, 3, 1, 4)  # (B, G, 1, T, d)
        v = self.w_v(x).reshape(B, T, G, 1, d_k).permute(0, 2, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).reshape(B, self.num_heads, T, T)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
            blocked = mask.all(dim=-1, keepdim=True)
            scores = scores.masked_fill(blocked, 0.0)
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = weights.masked_fill(blocked, 0.0)
        heads = weights.reshape(B, G, n_rep, T, T) @ v  # (B, G, n, T, d)
        return self.w_o(heads.permute(0, 3, 1, 2, 4).reshape(B, T, D)), weights
