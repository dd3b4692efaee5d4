"""Mutant: classify_heads judges all-zero rows too (entropy 0), which pull a head towards
"collapsed"; a head with only zero rows is "collapsed" instead of "fine". No input had
zero rows with room to attend, so it kept its points. The solution's source with
one edit."""

# expects: classify-keeps-zero-rows
# loses: classify-heads
from inspect import getsource

import solutions.diagnostics as _solution

_EDIT = (
    "    judged = (n >= 2) & (weights != 0).any(dim=-1)  # (B, H, L)\n",
    "    judged = n >= 2  # all-zero rows judged too\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
