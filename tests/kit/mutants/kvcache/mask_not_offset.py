"""Mutant: the causal mask is the (T, S) upper triangle, not shifted by the cached tokens. The
solution's source with one line changed."""

# expects: kv-mask-not-offset
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key",
    "mask = torch.ones(T, k.size(2), dtype=torch.bool).triu(1)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
