"""Alternative: the scores as two einsums (nope and rope, the rotary key never expanded), the
absorbed step through F.scaled_dot_product_attention with its scale corrected, a list cache."""

import math

import torch
import torch.nn.functional as F

import solutions.mla as _s
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def _parts(self, x, positions):
        B, T, _ = x.shape
        c_q = self.q_norm(self.w_dq(x))
        q_nope = self.w_uq(c_q).unflatten(-1, (self.num_heads, self.d_head))  # (B, T, H, d)
        q_rope = self.w_qr(c_q).unflatten(-1, (self.num_heads, self.d_rope))
        q_rope = apply_rotary(q_rope.transpose(1, 2), positions, self.base)  # (B, H, T, r)
        c_kv = self.kv_norm(self.w_dkv(x))
        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, r)
        return c_q, q_nope, q_rope, c_kv, k_rope

    def forward(self, x):
        B, T, _ = x.shape
        _, q_nope, q_rope, c_kv, k_rope = self._parts(x, torch.arange(T))
        k_nope = self.w_uk(c_kv).unflatten(-1, (self.num_heads, self.d_head))
        v = self.w_uv(c_kv).unflatten(-1, (self.num_heads, self.d_head))
        scores = torch.einsum("bthd,bshd->bhts", q_nope, k_nope)
        scores = scores + torch.einsum("bhtr,bsr->bhts", q_rope, k_rope)
        scores = scores * (self.d_head + self.d_rope) ** -0.5
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)
        heads = torch.einsum("bhts,bshd->bthd", weights, v)
        return self.w_o(heads.flatten(2))

    def absorbed_weights(self):
        H, d, D = self.num_heads, self.d_head, self.d_model
        w_uq = self.w_uq.weight.unflatten(0, (H, d))  # (H, d, d_c_q)
        w_uk = self.w_uk.weight.unflatten(0, (H, d))  # (H, d, d_c)
        w_uv = self.w_uv.weight.unflatten(0, (H, d))
        w_o = self.w_o.weight.unflatten(1, (H, d))  # (D, H, d)
        w_q = torch.einsum("hdq,hdc->hqc", w_uq, w_uk)
        w_out = torch.einsum("hdc,ehd->hce", w_uv, w_o)
        assert w_out.shape == (H, self.d_c, D)
        return w_q, w_out

    def forward_absorbed(self, x, cache=None, absorbed=None):
        B, T, _ = x.shape
        w_q, w_o = absorbed if absorbed is not None else self.absorbed_weights()
        p0 = cache[0].shape[1] if cache is not None else 0
        positions = torch.arange(p0, p0 + T)
        c_q, _, q_rope, c_kv, k_rope = self._parts(x, positions)
        if cache is not None:
            c_kv, k_rope = torch.cat((cache[0], c_kv), 1), torch.cat((cache[1], k_rope), 1)
        S = c_kv.shape[1]
        q = torch.cat([torch.einsum("btq,hqc->bhtc", c_q, w_q), q_rope], dim=-1)
        # SDPA divides by sqrt(d_c + d_rope), the width it sees: undo that, divide by the head's
        q = q * math.sqrt((self.d_c + self.d_rope) / (self.d_head + self.d_rope))
        k = torch.cat([c_kv, k_rope], dim=-1)[:, None].expand(B, self.num_heads, S, -1)
        allowed = torch.arange(S)[None, :] <= positions[:, None]  # True = may attend
        lat = F.scaled_dot_product_attention(
            q, k, c_kv[:, None].expand(B, self.num_heads, S, -1), attn_mask=allowed
        )
        return torch.einsum("bhtc,hcd->btd", lat, w_o), [c_kv, k_rope]


def cache_bytes_per_token(kind, num_heads, d_head, num_kv_heads=None, d_c=None, d_rope=None,
                          dtype=torch.float32):  # fmt: skip
    table = {"mha": (2, num_heads, d_head), "gqa": (2, num_kv_heads, d_head), "mqa": (2, 1, d_head)}
    if kind == "mla":
        return (d_c + d_rope) * dtype.itemsize
    if kind not in table:
        raise ValueError(f"unknown kind {kind!r}: expected mha, gqa, mqa or mla")
    a, b, c = table[kind]
    return a * b * c * dtype.itemsize
