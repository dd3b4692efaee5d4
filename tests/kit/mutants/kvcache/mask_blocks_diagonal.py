"""Mutant: the layer's own mask uses >= where > belongs, so it blocks the diagonal: masks'
mistake, made again where CachedAttention builds its mask. The solution's source with one line
changed."""

# expects: causal-blocks-diagonal
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key",
    "mask = key_positions[None, :] >= positions[:, None]",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
