"""Alternative: repeat_kv by index_select; the layer picks each query head's key/value head
with an index kept as a persistent buffer (group: in the state_dict, not a weight), reshape
and permute instead of view and transpose."""

import torch
from torch import nn

from .attention import scaled_dot_product_attention


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    idx = torch.arange(x.shape[1] * n_rep, device=x.device).div(n_rep, rounding_mode="floor")
    return x.index_select(1, idx)


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype=torch.float32):
    per = torch.empty((), dtype=dtype).element_size()
    return 2 * T * num_kv_heads * (d_model // num_heads) * per


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}")
        if d_model % num_heads:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_k = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.register_buffer("group", torch.arange(num_heads) // self.n_rep)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, -1).permute(0, 2, 1, 3)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, -1).permute(0, 2, 1, 3)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, -1).permute(0, 2, 1, 3)
        k, v = k[:, self.group], v[:, self.group]
        heads, w = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(B, T, D)), w
