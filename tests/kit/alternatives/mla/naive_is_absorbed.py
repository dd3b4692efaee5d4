"""Alternative: forward is the absorbed form with an empty cache (the same numbers), and the
absorbed matrices built head by head in a Python loop."""

import torch

import solutions.mla as _s
from solutions.mla import *  # noqa: F403


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def forward(self, x):
        out, _ = self.forward_absorbed(x)
        return out

    def absorbed_weights(self):
        d, w_q, w_o = self.d_head, [], []
        for h in range(self.num_heads):
            rows = slice(h * d, (h + 1) * d)
            w_q.append(self.w_uq.weight[rows].T @ self.w_uk.weight[rows])  # (d_c_q, d_c)
            w_o.append(self.w_uv.weight[rows].T @ self.w_o.weight[:, rows].T)  # (d_c, D)
        return torch.stack(w_q), torch.stack(w_o)


def cache_bytes_per_token(kind, num_heads, d_head, num_kv_heads=None, d_c=None, d_rope=None,
                          dtype=torch.float32):  # fmt: skip
    per_token = {
        "mha": 2 * num_heads * d_head,
        "gqa": 2 * (num_kv_heads or 0) * d_head,
        "mqa": 2 * d_head,
        "mla": (d_c or 0) + (d_rope or 0),
    }
    if kind not in per_token:
        raise ValueError(f"kind must be one of {sorted(per_token)}, got {kind!r}")
    return per_token[kind] * torch.finfo(dtype).bits // 8
