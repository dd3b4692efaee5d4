"""Mutant: forward_absorbed scales by the absorbed query's width, 1/sqrt(d_c + d_rope)."""

# expects: mla-absorbed-scale-latent
# loses: absorbed-reference, absorbed-equals-naive
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
        p0 = 0 if cache is None else cache[0].size(1)
        positions = torch.arange(p0, p0 + T, device=x.device)
        # 1) the new tokens' latents and rotary parts
        c_q = self.q_norm(self.w_dq(x))  # (B, T, d_c_q)
        q_rope = self.w_qr(c_q).view(B, T, H, d_rope).transpose(1, 2)  # (B, H, T, d_rope)
        q_rope = apply_rotary(q_rope, positions, self.base)
        c_kv = self.kv_norm(self.w_dkv(x))  # (B, T, d_c)
        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, d_rope)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)  # (B, S, d_c)
            k_rope = torch.cat([cache[1], k_rope], dim=1)  # (B, S, d_rope)
        # 2) the query in the latent space: W_UK absorbed
        q_lat = torch.einsum("btq,hqc->bhtc", c_q, w_q)  # (B, H, T, d_c)
        # 3) scores against the shared latents and rotary keys, the naive form's scale
        scores = q_lat @ c_kv[:, None].transpose(-2, -1)  # (B, H, T, d_c) x (B, 1, d_c, S)
        scores = scores + q_rope @ k_rope[:, None].transpose(-2, -1)  # (B, H, T, S)
        scores = scores / math.sqrt(self.d_c + d_rope)
        key_positions = torch.arange(c_kv.size(1), device=x.device)
        mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        # 4) the weighted latents, W_UV and W_O absorbed: summed over the heads
        latents = weights @ c_kv[:, None]  # (B, H, T, S) x (B, 1, S, d_c) -> (B, H, T, d_c)
        out = torch.einsum("bhtc,hcd->btd", latents, w_o)  # (B, T, D)
        return out, (c_kv, k_rope)
