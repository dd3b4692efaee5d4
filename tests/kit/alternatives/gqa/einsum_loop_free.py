"""Alternative: einsum projections from the weight matrices, repeat_kv by gather-free
stack, the trusted attention, and sizes checked in the opposite order."""

import torch
from torch import nn

from .attention import scaled_dot_product_attention


def repeat_kv(x, n_rep):
    return torch.stack([x] * n_rep, dim=2).flatten(1, 2)


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype=torch.float32):
    bits = 2 * T * num_kv_heads * (d_model // num_heads) * torch.finfo(dtype).bits
    return bits // 8


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model {d_model} cannot be split into {num_heads} heads")
        if num_heads % num_kv_heads != 0:
            raise ValueError(
                f"{num_heads} query heads cannot be shared equally by {num_kv_heads} kv heads"
            )
        self.cfg = (num_heads, num_kv_heads, d_model // num_heads)
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, layer, x, n):
        y = torch.einsum("btd,fd->btf", x, layer.weight)
        if layer.bias is not None:
            y = y + layer.bias
        return y.unflatten(-1, (n, -1)).transpose(1, 2)

    def forward(self, x, mask=None):
        H, H_kv, _ = self.cfg
        q = self._heads(self.w_q, x, H)
        k = repeat_kv(self._heads(self.w_k, x, H_kv), H // H_kv)
        v = repeat_kv(self._heads(self.w_v, x, H_kv), H // H_kv)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(heads.transpose(1, 2).flatten(2)), weights
