"""Mutant: the values are rotated too (and cached rotated). The solution's source with one line
changed."""

# expects: rope-rotates-v
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)",
    "q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, "
    "self.base); v = apply_rotary(v, positions, self.base)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
