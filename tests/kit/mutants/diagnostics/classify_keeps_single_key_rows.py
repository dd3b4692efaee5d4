"""Mutant: classify_heads judges rows with fewer than 2 allowed keys too (the first row under
a causal mask: entropy 0 over log 2). It was named classify-relative-to-log-s, which it does
not do. The solution's source with
one edit."""

# expects: classify-keeps-single-key-rows
# loses: classify-heads
from inspect import getsource

import solutions.diagnostics as _solution

_EDIT = (
    "    judged = (n >= 2) & (weights != 0).any(dim=-1)  # (B, H, L)\n",
    "    judged = (weights != 0).any(dim=-1)  # rows with one allowed key judged too\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
