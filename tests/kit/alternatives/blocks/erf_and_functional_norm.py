"""Alternative: GELU written with erf, the norms called through F.layer_norm with the
modules' own parameters, and the two placements as separate methods."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    y = centred / (centred.square().mean(-1, keepdim=True) + eps).sqrt()
    if weight is not None:
        y = weight * y
    if bias is not None:
        y = bias + y
    return y


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = self.linear1(x)
        if self.activation == "gelu":
            h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        else:
            h = h.clamp(min=0)
        return self.linear2(self.dropout(h))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu"):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=False)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _norm(self, module, x):
        return F.layer_norm(x, module.normalized_shape, module.weight, module.bias, module.eps)

    def _pre(self, x, mask):
        a, w = self.attn(self._norm(self.norm1, x), mask=mask)
        y = x + self.dropout(a)
        return y + self.dropout(self.ffn(self._norm(self.norm2, y))), w

    def _post(self, x, mask):
        a, w = self.attn(x, mask=mask)
        y = self._norm(self.norm1, self.dropout(a) + x)
        return self._norm(self.norm2, self.dropout(self.ffn(y)) + y), w

    def forward(self, x, mask=None):
        return self._pre(x, mask) if self.norm_first else self._post(x, mask)
