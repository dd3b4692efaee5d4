"""Mutant: every query head uses key/value head 0 (multi-query whatever num_kv_heads says)."""

# expects: gqa-one-kv-head
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base

from .attention import scaled_dot_product_attention


class GroupedQueryAttention(_Base):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = k[:, :1].expand_as(q), v[:, :1].expand_as(q)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
