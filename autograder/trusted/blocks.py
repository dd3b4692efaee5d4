"""Trusted blocks, from PyTorch built-ins: F.layer_norm, F.gelu / F.relu, nn.LayerNorm.

The attribute names (attn, ffn, norm1, norm2, dropout; linear1, linear2) are the exercise's,
so the same state_dict loads into both. The attention is the trusted MultiHeadAttention
(autograder/trusted/multihead.py).
"""

import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"activation must be 'gelu' or 'relu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        act = F.gelu if self.activation == "gelu" else F.relu
        return self.linear2(self.dropout(act(self.linear1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu"):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=False)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _attend(self, x, mask):
        out, weights = self.attn(x, mask=mask)
        return self.dropout(out), weights

    def forward(self, x, mask=None):
        if self.norm_first:
            out, weights = self._attend(self.norm1(x), mask)
            x = x + out
            return x + self.dropout(self.ffn(self.norm2(x))), weights
        out, weights = self._attend(x, mask)
        x = self.norm1(x + out)
        return self.norm2(x + self.dropout(self.ffn(x))), weights
