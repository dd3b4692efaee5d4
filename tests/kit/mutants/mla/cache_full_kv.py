"""Mutant: forward_absorbed builds and caches every head's keys and values."""

# expects: mla-cache-full-kv
import math  # noqa: F401

import torch
from torch import nn  # noqa: F401

import solutions.mla as _s
from solutions.attention import scaled_dot_product_attention  # noqa: F401
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary  # noqa: F401


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def forward_absorbed(self, x, cache=None, absorbed=None):
        B, T, _ = x.shape
        H, d_rope = self.num_heads, self.d_rope
        w_q, w_o = self.absorbed_weights() if absorbed is None else absorbed
        p0 = 0 if cache is None else cache[0].size(2)
        positions = torch.arange(p0, p0 + T, device=x.device)
        # 1) the new tokens' latents and rotary parts
        c_q = self.q_norm(self.w_dq(x))  # (B, T, d_c_q)
        q_rope = self.w_qr(c_q).view(B, T, H, d_rope).transpose(1, 2)  # (B, H, T, d_rope)
        q_rope = apply_rotary(q_rope, positions, self.base)
        c_kv = self.kv_norm(self.w_dkv(x))  # (B, T, d_c)
        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, d_rope)
        d_head = self.d_head
        q = torch.cat([self.w_uq(c_q).view(B, T, H, d_head).transpose(1, 2), q_rope], dim=-1)
        k_nope = self.w_uk(c_kv).view(B, T, H, d_head).transpose(1, 2)
        k = torch.cat([k_nope, k_rope[:, None].expand(B, H, T, d_rope)], dim=-1)
        v = self.w_uv(c_kv).view(B, T, H, d_head).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        mask = torch.arange(k.size(2), device=x.device)[None, :] > positions[:, None]
        heads, _ = scaled_dot_product_attention(q, k, v, mask)
        out = self.w_o(heads.transpose(1, 2).reshape(B, T, H * d_head))
        return out, (k, v)
