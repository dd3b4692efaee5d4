"""Mutant: RotaryAttention splits its heads by reshape alone, (B, T, D) -> (B, H, T, d_k) with
no transpose: multihead's mistake, made again where the attention splits its own heads."""

# expects: split-view-no-transpose
# loses: attention
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, self.num_heads, T, self.d_k)
        k = self.w_k(x).reshape(B, self.num_kv_heads, T, self.d_k)
        v = self.w_v(x).reshape(B, self.num_kv_heads, T, self.d_k)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = heads.transpose(1, 2).reshape(B, T, self.num_heads * self.d_k)
        return self.w_o(out), weights
