"""Alternative: view + permute to split, permute + contiguous + view to merge, F.dropout."""

import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    B, T, D = x.size()
    if D % num_heads:
        raise ValueError(
            f"{D} features cannot be split into {num_heads} equal heads: not divisible"
        )
    return x.view(B, T, num_heads, D // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    B, H, T, d_k = x.size()
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * d_k)


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
        self.p = dropout

    def forward(self, query, key=None, value=None, mask=None):
        if key is None:
            key = query
        if value is None:
            value = key
        q, k, v = (
            split_heads(proj(t), self.num_heads)
            for proj, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value))
        )
        _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        weights = F.dropout(weights, self.p, training=self.training)
        return self.w_o(merge_heads(weights.matmul(v))), weights
