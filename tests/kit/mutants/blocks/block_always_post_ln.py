"""Mutant: Post-LN whatever norm_first says (the seeds' 'LN must follow the residual')."""

# expects: block-post-ln-for-pre-ln
import torch.nn.functional as F  # noqa: F401
from torch import nn

from solutions.blocks import FeedForward, layer_norm  # noqa: F401

from .multihead import MultiHeadAttention


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
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(x + self.dropout(h))
        x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
