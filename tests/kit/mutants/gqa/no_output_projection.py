"""Mutant: forgets w_o; returns the merged heads."""

# expects: gqa-no-output-projection
# loses: grouped
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base
from solutions.gqa import repeat_kv

from .attention import scaled_dot_product_attention


class GroupedQueryAttention(_Base):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return heads.transpose(1, 2).reshape(B, T, self.d_model), weights
