"""Mutant: GroupedQueryAttention merges its heads by reshape alone, (B, H, T, d_k) ->
(B, T, D) with no transpose: multihead's mistake, made again where this layer merges its own
heads. Its weights are right: the checks of the weights (scale, groups) pass, and the checks
that vary something else (mqa, mha, mask, bias) accept a run right but for this merge."""

# expects: merge-view-no-transpose
# loses: grouped
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Reference
from solutions.gqa import repeat_kv, scaled_dot_product_attention


class GroupedQueryAttention(_Reference):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.reshape(B, T, self.d_model)), weights
