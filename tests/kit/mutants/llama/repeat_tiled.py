"""Mutant: the key/value heads tiled with Tensor.repeat (0, 1, 0, 1), not repeated in a row."""

# expects: gqa-repeat-tiled
# loses: attention
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        split = {
            name: getattr(self, name)(x).reshape(B, T, -1, self.d_k).transpose(1, 2)
            for name in ("w_q", "w_k", "w_v")
        }
        q, k = (apply_rotary(split[n], positions, self.base) for n in ("w_q", "w_k"))
        k, v = k.repeat(1, self.n_rep, 1, 1), split["w_v"].repeat(1, self.n_rep, 1, 1)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, -1)), weights
