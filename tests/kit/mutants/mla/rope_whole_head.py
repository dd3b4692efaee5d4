"""Mutant: forward rotates the whole head [nope, rope], not the rotary part only."""

# expects: mla-rope-whole-head
# loses: reference, rope-part
import math  # noqa: F401

import torch
from torch import nn  # noqa: F401

import solutions.mla as _s
from solutions.attention import scaled_dot_product_attention  # noqa: F401
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary  # noqa: F401


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def forward(self, x):
        B, T, _ = x.shape
        H, d_head, d_rope = self.num_heads, self.d_head, self.d_rope
        positions = torch.arange(T, device=x.device)
        # 1) the query path, through the latent c_Q
        c_q = self.q_norm(self.w_dq(x))  # (B, T, d_c_q)
        q_nope = self.w_uq(c_q).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        q_rope = self.w_qr(c_q).view(B, T, H, d_rope).transpose(1, 2)  # (B, H, T, d_rope)
        # 2) the key/value path, through the latent c_KV; the rotary key from x, one per token
        c_kv = self.kv_norm(self.w_dkv(x))  # (B, T, d_c)
        k_nope = self.w_uk(c_kv).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        v = self.w_uv(c_kv).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        k_rope = self.w_kr(x)  # (B, T, d_rope)
        k_rope = k_rope[:, None].expand(B, H, T, d_rope)  # shared by every head
        # 3) attend: q·k = q_nope·k_nope + q_rope·k_rope, scaled by 1/sqrt(d_head + d_rope)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, T, d_head + d_rope)
        k = torch.cat([k_nope, k_rope], dim=-1)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        heads, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H, T, d_head)
        # 4) concatenate the heads and project out
        return self.w_o(heads.transpose(1, 2).reshape(B, T, H * d_head))
