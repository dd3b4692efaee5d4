"""Mutant: bool tensors instead of numbers (computes nothing; issue 12 won 17/21 with it)."""

# expects: wrong-dtype
# breaks: every exercise
import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"d_model = {D} is not divisible by num_heads = {num_heads}")
    return torch.zeros(B, num_heads, T, D // num_heads, dtype=torch.bool)


def merge_heads(x):
    B, H, T, d_k = x.shape
    return torch.zeros(B, T, H * d_k, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        B, L, D = query.shape
        S = key.size(1)
        return (
            torch.zeros(B, L, D, dtype=torch.bool),
            torch.zeros(B, self.num_heads, L, S, dtype=torch.bool),
        )
