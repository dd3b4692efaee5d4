"""Mutant: no causal mask ("a single step needs none"), so a prefill's tokens see the tokens
after them. The solution's source with one line changed."""

# expects: kv-prefill-no-mask
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key",
    "mask = None",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
