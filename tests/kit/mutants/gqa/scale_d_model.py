"""Mutant: attention computed inline, scores divided by √d_model instead of √d_k."""

# expects: gqa-wrong-scale
import math

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base
from solutions.gqa import repeat_kv


class GroupedQueryAttention(_Base):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        heads = weights @ v
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
