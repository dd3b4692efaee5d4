"""Mutant: repeat_kv under @torch.no_grad() ("it only copies"): the right values, but no
gradient goes back through it, so w_k and w_v never learn. GroupedQueryAttention calls this
repeat_kv: its check does not charge the cut again."""

# expects: no-gradient
# loses: repeat-kv
import types

import torch

from solutions import gqa as _solution
from solutions.gqa import *  # noqa: F403
from solutions.gqa import GroupedQueryAttention as _Reference


@torch.no_grad()
def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


class GroupedQueryAttention(_Reference):
    # the solution's forward, over this repeat_kv
    forward = types.FunctionType(
        _Reference.forward.__code__,
        {**vars(_solution), "repeat_kv": repeat_kv},
        argdefs=_Reference.forward.__defaults__,
    )
