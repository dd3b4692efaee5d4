"""Mutant: absorbed_weights reshapes w_o.weight (D, H*d_head) to (H, d_head, D)."""

# expects: mla-absorb-o-view
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
        w_uk = self.w_uk.weight.view(H, d_head, self.d_c)
        w_uv = self.w_uv.weight.view(H, d_head, self.d_c)
        w_o = self.w_o.weight.reshape(H, d_head, D)  # (H, d_head, D)
        return w_uq.transpose(1, 2) @ w_uk, w_uv.transpose(1, 2) @ w_o
