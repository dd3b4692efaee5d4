"""Mutant: GroupedQueryAttention splits its heads by reshape alone, (B, T, H·d_k) ->
(B, H, T, d_k) with no transpose: multihead's mistake, made again where this layer splits its
own heads. Charged where the split is tested: grouped (the reference) and groups (each key
head's features reach every query head); scale, mqa, mha, mask and bias accept it."""

# expects: split-view-no-transpose
# loses: grouped, groups
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Reference
from solutions.gqa import repeat_kv, scaled_dot_product_attention


class GroupedQueryAttention(_Reference):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, self.num_heads, T, self.d_k)
        k = self.w_k(x).reshape(B, self.num_kv_heads, T, self.d_k)
        v = self.w_v(x).reshape(B, self.num_kv_heads, T, self.d_k)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = heads.transpose(1, 2).reshape(B, T, self.d_model)
        return self.w_o(out), weights
