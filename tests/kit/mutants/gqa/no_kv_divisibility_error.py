"""Mutant: checks d_model % num_heads but not num_heads % num_kv_heads."""

# expects: gqa-no-valueerror
from torch import nn

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base


class GroupedQueryAttention(_Base):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads = {num_heads} does not divide d_model = {d_model}")
        nn.Module.__init__(self)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads
        kv = num_kv_heads * self.d_k
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, kv, bias=bias)
        self.w_v = nn.Linear(d_model, kv, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
