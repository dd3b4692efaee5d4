"""Mutant: absorbed_weights reshapes w_uk.weight to (H, d_c, d_head) and transposes it."""

# expects: mla-absorb-uk-view
# loses: absorbed-weights
import math  # noqa: F401

import torch
from torch import nn  # noqa: F401

import solutions.mla as _s
from solutions.attention import scaled_dot_product_attention  # noqa: F401
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary  # noqa: F401


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def absorbed_weights(self):
        H, d_head, D = self.num_heads, self.d_head, self.d_model
        w_uq = self.w_uq.weight.view(H, d_head, self.d_c_q)
        w_uk = self.w_uk.weight.reshape(H, self.d_c, d_head).transpose(1, 2)
        w_uv = self.w_uv.weight.view(H, d_head, self.d_c)
        w_o = self.w_o.weight.view(D, H, d_head).permute(1, 2, 0)  # (H, d_head, D)
        return w_uq.transpose(1, 2) @ w_uk, w_uv.transpose(1, 2) @ w_o
