"""Alternative: GELU written with erf, its constant 1/√2 kept as a persistent buffer of the
FeedForward (in the state_dict, not a weight), layer_norm by rsqrt and addcmul, the block
calling attention with explicit (h, h, h) and a keyword mask."""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    c = x - x.mean(-1, keepdim=True)
    y = c * torch.rsqrt(c.square().mean(-1, keepdim=True) + eps)
    if weight is not None and bias is not None:
        return torch.addcmul(bias, y, weight)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"activation must be 'gelu' or 'relu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("inv_sqrt2", torch.tensor(0.5**0.5))

    def forward(self, x):
        h = self.linear1(x)
        if self.activation == "gelu":
            h = 0.5 * h * (1.0 + torch.erf(h * self.inv_sqrt2))
        else:
            h = torch.relu(h)
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

    def _sa(self, h, mask):
        out, w = self.attn(h, h, h, mask=mask)
        return self.dropout(out), w

    def forward(self, x, mask=None):
        if self.norm_first:
            a, w = self._sa(self.norm1(x), mask)
            x = x + a
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            a, w = self._sa(x, mask)
            x = self.norm1(x + a)
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, w
