"""Mutant: forward shares the key/value heads with Tensor.repeat instead of repeat_interleave."""

# expects: gqa-repeat-tiled
# loses: grouped, groups
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base

from .attention import scaled_dot_product_attention


class GroupedQueryAttention(_Base):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = k.repeat(1, self.n_rep, 1, 1), v.repeat(1, self.n_rep, 1, 1)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
