"""Mutant: one message for both size errors, which says neither."""

# expects: gqa-error-unclear
# loses: sizes-error
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base


class GroupedQueryAttention(_Base):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        if num_heads % num_kv_heads or d_model % num_heads:
            raise ValueError("bad sizes")
        super().__init__(d_model, num_heads, num_kv_heads, bias=bias)
