"""Mutant: scores divided by √(H_kv·d_k), the width of all key heads, not √d_k."""

# expects: gqa-wrong-scale
# loses: grouped, scale
import math

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
        # the trusted attention divides by √d_k; this scales q so the divisor is √(H_kv·d_k)
        q = q * math.sqrt(self.d_k / (self.num_kv_heads * self.d_k))
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
