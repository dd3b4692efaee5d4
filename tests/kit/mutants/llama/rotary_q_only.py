"""Mutant: only the queries are rotated."""

# expects: llama-rotary-one-side
# loses: rotary
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, D = x.shape
        q = apply_rotary(
            self.w_q(x).view(B, T, -1, self.d_k).permute(0, 2, 1, 3), positions, self.base
        )
        kv = [w(x).view(B, T, -1, self.d_k).permute(0, 2, 1, 3) for w in (self.w_k, self.w_v)]
        heads, weights = scaled_dot_product_attention(
            q, *(repeat_kv(t, self.n_rep) for t in kv), mask
        )
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(B, T, D)), weights
