"""Mutant: the values are rotated too, not only the queries and keys."""

# expects: llama-rotates-v
# loses: rotary
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv, scaled_dot_product_attention


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        def heads(linear, n):
            return linear(x).unflatten(-1, (n, self.d_k)).transpose(1, 2)

        q = heads(self.w_q, self.num_heads)
        k, v = heads(self.w_k, self.num_kv_heads), heads(self.w_v, self.num_kv_heads)
        q, k, v = (apply_rotary(t, positions, self.base) for t in (q, k, v))
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).flatten(2)), weights
