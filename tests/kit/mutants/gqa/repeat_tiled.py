"""Mutant: repeat_kv tiles the heads with Tensor.repeat (0, 1, 0, 1, ...)."""

# expects: gqa-repeat-tiled
from types import FunctionType

from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Base

from .attention import scaled_dot_product_attention


def repeat_kv(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)


class GroupedQueryAttention(_Base):
    # The solution's forward, run with this file's globals (this repeat_kv, attention).
    forward = FunctionType(_Base.forward.__code__, globals(), argdefs=_Base.forward.__defaults__)
