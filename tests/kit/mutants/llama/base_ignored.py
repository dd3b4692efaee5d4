"""Mutant: apply_rotary with its default base, not self.base."""

# expects: llama-base-ignored
# loses: rotary
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, D = x.shape
        q, k, v = torch.split(
            torch.cat([self.w_q(x), self.w_k(x), self.w_v(x)], dim=-1),
            [D, self.num_kv_heads * self.d_k, self.num_kv_heads * self.d_k],
            dim=-1,
        )
        q = apply_rotary(q.reshape(B, T, -1, self.d_k).transpose(1, 2), positions)
        k = apply_rotary(k.reshape(B, T, -1, self.d_k).transpose(1, 2), positions)
        v = v.reshape(B, T, -1, self.d_k).transpose(1, 2)
        out, weights = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(out.transpose(1, 2).reshape(B, T, D)), weights
