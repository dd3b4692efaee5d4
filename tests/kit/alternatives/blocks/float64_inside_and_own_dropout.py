"""Alternative: layer_norm computed in float64 and cast back, dropout written by hand (a
Bernoulli keep mask scaled by 1 / (1 - p), in training mode only), and the block as a loop over
its two (norm, sub-layer) pairs."""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    z = x.double()
    z = (z - z.mean(-1, keepdim=True)) / (z.var(-1, keepdim=True, unbiased=False) + eps).sqrt()
    z = z.to(x.dtype)
    if weight is not None:
        z = z * weight
    if bias is not None:
        z = z + bias
    return z


def _drop(h, p, training):
    if not training or p == 0:
        return h
    keep = torch.bernoulli(torch.full_like(h, 1 - p))
    return h * keep / (1 - p)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.linear2(_drop(h, self.dropout.p, self.training))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu"):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=False)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        kept = {}

        def attend(h):
            out, kept["weights"] = self.attn(h, mask=mask)
            return out

        for norm, sublayer in ((self.norm1, attend), (self.norm2, self.ffn)):
            if self.norm_first:
                x = x + _drop(sublayer(norm(x)), self.dropout.p, self.training)
            else:
                x = norm(x + _drop(sublayer(x), self.dropout.p, self.training))
        return x, kept["weights"]
