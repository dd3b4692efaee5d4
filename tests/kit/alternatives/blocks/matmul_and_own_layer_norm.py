"""Alternative: FeedForward with explicit matmuls (x @ W.T + b), F.dropout with
training=self.training, and the block's norms computed by this file's own layer_norm with the
nn.LayerNorm modules' parameters."""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    D = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / D
    var = ((x - mean) * (x - mean)).sum(-1, keepdim=True) / D
    y = (x - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = x @ self.linear1.weight.T + self.linear1.bias
        h = torch.clamp(h, min=0) if self.activation == "relu" else F.gelu(h)
        h = F.dropout(h, self.dropout.p, training=self.training)
        return h @ self.linear2.weight.T + self.linear2.bias


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
        return layer_norm(x, module.weight, module.bias, module.eps)

    def forward(self, x, mask=None):
        p, training = self.dropout.p, self.training
        if self.norm_first:
            a, weights = self.attn(self._norm(self.norm1, x), mask=mask)
            x = x + F.dropout(a, p, training)
            f = self.ffn(self._norm(self.norm2, x))
            return x + F.dropout(f, p, training), weights
        a, weights = self.attn(x, mask=mask)
        x = self._norm(self.norm1, x + F.dropout(a, p, training))
        f = self.ffn(x)
        return self._norm(self.norm2, x + F.dropout(f, p, training)), weights
