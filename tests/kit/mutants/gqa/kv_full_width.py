"""Mutant: key/value projections of full width (D -> D): multi-head attention in disguise."""

# expects: gqa-kv-full-width
from torch import nn

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base

from .attention import scaled_dot_product_attention


class GroupedQueryAttention(_Base):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__(d_model, num_heads, num_kv_heads, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q, k, v = (
            w(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
            for w in (self.w_q, self.w_k, self.w_v)
        )
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
