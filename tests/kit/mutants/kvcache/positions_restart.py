"""Mutant: every call rotates its tokens at positions 0 .. T-1, whatever the cache holds (the
mask still uses the right positions). The solution's source with one line changed."""

# expects: kv-positions-restart
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)",
    "q, k = apply_rotary(q, positions - p0, self.base), apply_rotary(k, positions - p0, self.base)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
