"""Alternative: repeat_kv with expand + reshape (the LLaMA reference code's way), heads split
with view/permute, sizes checked with divmod."""

from torch import nn

from .attention import scaled_dot_product_attention


def repeat_kv(x, n_rep):
    B, H_kv, T, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(B, H_kv, n_rep, T, d).reshape(B, H_kv * n_rep, T, d)


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype):
    per_token = 2 * num_kv_heads * (d_model // num_heads)
    return int(per_token * T * dtype.itemsize)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        n_rep, rest = divmod(num_heads, num_kv_heads)
        if rest:
            raise ValueError(
                f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
            )
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of num_heads ({num_heads})")
        self.h, self.h_kv, self.n_rep = num_heads, num_kv_heads, n_rep
        self.hd = d_model // num_heads
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.w_q(x).view(B, T, self.h, self.hd).permute(0, 2, 1, 3)
        k = self.w_k(x).view(B, T, self.h_kv, self.hd).permute(0, 2, 1, 3)
        v = self.w_v(x).view(B, T, self.h_kv, self.hd).permute(0, 2, 1, 3)
        heads, weights = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(B, T, D)), weights
