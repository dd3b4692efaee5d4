"""Mutant: RotaryAttention merges its heads by reshape alone, (B, H, T, d_k) -> (B, T, D) with
no transpose: multihead's mistake, made again where the attention merges its own heads."""

# expects: merge-view-no-transpose
# loses: attention
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.reshape(B, T, self.num_heads * self.d_k)), weights
