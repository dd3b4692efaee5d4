"""Trusted multi-head attention, from torch.nn.functional.multi_head_attention_forward.

The parameters have the exercise's names (w_q, w_k, w_v, w_o), so the same state_dict loads
into both. F.multi_head_attention_forward uses the same bool mask convention (True = not
allowed) and, with need_weights=True, returns the weights after dropout, per head. Its one
difference: a row whose keys are all blocked is NaN there and zero in this kit, so such rows
are unblocked for PyTorch and zeroed here.
"""

import torch
import torch.nn.functional as F
from torch import nn


def _check_divisible(D, num_heads):
    if D % num_heads != 0:
        raise ValueError(f"d_model = {D} is not divisible by num_heads = {num_heads}")


def split_heads(x, num_heads):
    _check_divisible(x.size(-1), num_heads)
    return x.unflatten(-1, (num_heads, x.size(-1) // num_heads)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).flatten(2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        _check_divisible(d_model, num_heads)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        value = key if value is None else value
        B, L, D = query.shape
        S, H = key.size(1), self.num_heads
        blocked = None
        attn_mask = None
        if mask is not None:
            full = mask.expand(B, H, L, S)
            blocked = full.all(dim=-1, keepdim=True)  # (B, H, L, 1)
            attn_mask = (full & ~blocked).reshape(B * H, L, S)
        in_bias = None
        if self.w_q.bias is not None:
            in_bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        # W_O as PyTorch's out_proj when it is a Linear; any other module a student put in its
        # place (nn.Identity for "W_O fixed to the identity") is applied to the merged heads.
        linear = isinstance(self.w_o, nn.Linear)
        out_weight = (
            self.w_o.weight if linear else torch.eye(D, dtype=query.dtype, device=query.device)
        )
        out_bias = self.w_o.bias if linear else None
        out, weights = F.multi_head_attention_forward(
            query.transpose(0, 1),
            key.transpose(0, 1),
            value.transpose(0, 1),
            D,
            H,
            None,
            in_bias,
            None,
            None,
            False,
            self.dropout.p,
            out_weight,
            out_bias,
            training=self.training,
            need_weights=True,
            attn_mask=attn_mask,
            use_separate_proj_weight=True,
            q_proj_weight=self.w_q.weight,
            k_proj_weight=self.w_k.weight,
            v_proj_weight=self.w_v.weight,
            average_attn_weights=False,
        )
        out = out.transpose(0, 1)
        if not linear:
            out = self.w_o(out)
        if blocked is not None and blocked.any():
            # Rows with nothing to attend to: zero weights, and those heads contribute zero.
            weights = weights.masked_fill(blocked, 0.0)
            v = split_heads(F.linear(value, self.w_v.weight, self.w_v.bias), H)
            out = self.w_o(merge_heads(weights @ v))
        return out, weights
