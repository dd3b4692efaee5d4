"""Trusted gqa, used when another module that imports it is graded.

Built from PyTorch built-ins: torch.repeat_interleave, and F.scaled_dot_product_attention with
enable_gqa=True, which pairs query head h with key/value head h // (H / H_kv) itself. It returns
no weights; attending over the identity matrix as values returns them (weights @ I = weights).
A kit test (tests/kit/test_gqa.py) proves it equal to the solution.
"""

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype=torch.float32):
    return 2 * T * num_kv_heads * (d_model // num_heads) * dtype.itemsize


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        if num_kv_heads < 1 or num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads = {num_kv_heads} does not divide num_heads = {num_heads}"
            )
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads = {num_heads} does not divide d_model = {d_model}")
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        k = self.w_k(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        additive = torch.zeros(B, self.num_heads, T, T, dtype=x.dtype, device=x.device)
        blocked_rows = None
        if mask is not None:
            blocked_rows = mask.all(dim=-1, keepdim=True)
            additive = additive.masked_fill(mask & ~blocked_rows, float("-inf"))
        eye = torch.eye(T, dtype=x.dtype, device=x.device).expand(B, self.num_kv_heads, T, T)
        weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=additive, enable_gqa=True)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, enable_gqa=True)
        if blocked_rows is not None:
            weights = weights.masked_fill(blocked_rows, 0.0)
            heads = heads.masked_fill(blocked_rows, 0.0)
        return self.w_o(heads.transpose(1, 2).reshape(B, T, self.d_model)), weights
