"""Mutant: RotaryAttention computes its own scores and divides them by √d_model, the model's
width, instead of √d_k, one head's."""

# expects: gqa-wrong-scale
# loses: attention
import math

from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary, repeat_kv


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        def heads(linear, n):
            return linear(x).unflatten(-1, (n, self.d_k)).transpose(1, 2)

        q = apply_rotary(heads(self.w_q, self.num_heads), positions, self.base)
        k = apply_rotary(heads(self.w_k, self.num_kv_heads), positions, self.base)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(heads(self.w_v, self.num_kv_heads), self.n_rep)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.num_heads * self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        out = weights @ v
        return self.w_o(out.transpose(1, 2).flatten(2)), weights
