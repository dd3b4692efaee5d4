"""Mutant: each key/value head is repeated num_kv_heads times, not num_heads // num_kv_heads."""

# expects: gqa-wrong-group-count
from types import FunctionType

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base
from solutions.gqa import repeat_kv

from .attention import scaled_dot_product_attention


class GroupedQueryAttention(_Base):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__(d_model, num_heads, num_kv_heads, bias=bias)
        self.n_rep = num_kv_heads

    # The solution's forward, run with this file's globals (repeat_kv, attention).
    forward = FunctionType(_Base.forward.__code__, globals(), argdefs=_Base.forward.__defaults__)
