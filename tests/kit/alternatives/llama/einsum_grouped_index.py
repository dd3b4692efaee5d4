"""Alternative: the heads of each group picked by index (no repeat_kv), scores and mixing
with einsum, the mask applied by hand with masked_fill and softmax."""

import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import apply_rotary


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, D = x.shape
        q = self.w_q(x).view(B, T, self.num_heads, self.d_k).permute(0, 2, 1, 3)
        k = self.w_k(x).view(B, T, self.num_kv_heads, self.d_k).permute(0, 2, 1, 3)
        v = self.w_v(x).view(B, T, self.num_kv_heads, self.d_k).permute(0, 2, 1, 3)
        group = torch.arange(self.num_heads, device=x.device) // self.n_rep
        k = apply_rotary(k, positions, self.base)[:, group]
        q, v = apply_rotary(q, positions, self.base), v[:, group]
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / self.d_k**0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bihd", weights, v).reshape(B, T, D)
        return self.w_o(out), weights
