"""Alternative: unflatten / flatten for the heads, one transpose each way."""

from torch import nn

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    if x.shape[-1] % num_heads != 0:
        raise ValueError(
            f"cannot split {x.shape[-1]} features into {num_heads} heads: not divisible"
        )
    return x.unflatten(-1, (num_heads, -1)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).flatten(start_dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        value = key if value is None else value
        H = self.num_heads
        q = split_heads(self.w_q(query), H)
        k = split_heads(self.w_k(key), H)
        v = split_heads(self.w_v(value), H)
        weights = self.dropout(scaled_dot_product_attention(q, k, v, mask)[1])
        return self.w_o(merge_heads(weights @ v)), weights
