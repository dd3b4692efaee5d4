"""Mutant: repeat_kv under @torch.no_grad() ("it only copies"): the right values, but no
gradient goes back through it, so w_k and w_v never learn. GroupedQueryAttention calls this
repeat_kv: its check does not charge the cut again."""

# expects: no-gradient
# loses: repeat-kv
import torch

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Reference
from solutions.gqa import scaled_dot_product_attention


@torch.no_grad()
def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


class GroupedQueryAttention(_Reference):
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
