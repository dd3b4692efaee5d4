"""Alternative: torch.var_mean and rsqrt for the norm, F.linear for the FFN, and one helper
for the residual wiring of both sub-layers."""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    y = (x - mean) * torch.rsqrt(var + eps)
    return y * (1 if weight is None else weight) + (0 if bias is None else bias)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        act = {"gelu": F.gelu, "relu": torch.relu}[self.activation]
        h = act(F.linear(x, self.linear1.weight, self.linear1.bias))
        return F.linear(self.dropout(h), self.linear2.weight, self.linear2.bias)


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu"):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=False)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _residual(self, x, norm, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(self, x, mask=None):
        found = {}

        def attend(h):
            out, found["weights"] = self.attn(h, h, h, mask=mask)
            return out

        x = self._residual(x, self.norm1, attend)
        x = self._residual(x, self.norm2, self.ffn)
        return x, found["weights"]
