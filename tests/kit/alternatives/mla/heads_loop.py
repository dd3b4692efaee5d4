"""Alternative: forward loops over the heads, each attending with its own [nope, rope] query
and key; the absorbed step keeps its cache as the latents and rotary keys in float32 and
loops over the heads too."""

import math

import torch

import solutions.mla as _s
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def forward(self, x):
        B, T, _ = x.shape
        pos = torch.arange(T)
        c_q = self.q_norm(self.w_dq(x))
        c_kv = self.kv_norm(self.w_dkv(x))
        k_rope = apply_rotary(self.w_kr(x), pos, self.base)
        d, r = self.d_head, self.d_rope
        blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
        heads = []
        for h in range(self.num_heads):
            q_nope = c_q @ self.w_uq.weight[h * d : (h + 1) * d].T
            q_rope = apply_rotary(c_q @ self.w_qr.weight[h * r : (h + 1) * r].T, pos, self.base)
            k_nope = c_kv @ self.w_uk.weight[h * d : (h + 1) * d].T
            v = c_kv @ self.w_uv.weight[h * d : (h + 1) * d].T
            s = (q_nope @ k_nope.mT + q_rope @ k_rope.mT) / math.sqrt(d + r)
            heads.append(torch.softmax(s.masked_fill(blocked, float("-inf")), -1) @ v)
        return self.w_o(torch.cat(heads, dim=-1))

    def forward_absorbed(self, x, cache=None, absorbed=None):
        B, T, _ = x.shape
        w_q, w_o = self.absorbed_weights() if absorbed is None else absorbed
        old_c, old_k = cache if cache is not None else (x.new_zeros(B, 0, self.d_c),
                                                        x.new_zeros(B, 0, self.d_rope))  # fmt: skip
        p0, r = old_c.size(1), self.d_rope
        pos = torch.arange(p0, p0 + T)
        c_q = self.q_norm(self.w_dq(x))
        c_kv = torch.cat([old_c, self.kv_norm(self.w_dkv(x))], dim=1)
        k_rope = torch.cat([old_k, apply_rotary(self.w_kr(x), pos, self.base)], dim=1)
        blocked = torch.arange(c_kv.size(1))[None, :] > pos[:, None]
        out = 0
        for h in range(self.num_heads):
            q_rope = apply_rotary(c_q @ self.w_qr.weight[h * r : (h + 1) * r].T, pos, self.base)
            s = (c_q @ w_q[h]) @ c_kv.mT + q_rope @ k_rope.mT
            a = torch.softmax((s / math.sqrt(self.d_head + r)).masked_fill(blocked, -math.inf), -1)
            out = out + (a @ c_kv) @ w_o[h]
        return out, (c_kv, k_rope)
