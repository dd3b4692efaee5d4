"""Mutant: the key/value heads tiled with Tensor.repeat (0, 1, 0, 1), not repeated in a row."""

# expects: gqa-repeat-tiled
# loses: attention
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        k, v = k.repeat(1, self.n_rep, 1, 1), v.repeat(1, self.n_rep, 1, 1)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, -1)), weights
