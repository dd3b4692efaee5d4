"""Mutant: plot_attention has no default for key_tokens (None is iterated: a TypeError on
a self-attention call). No call left it out, so it kept its points. The solution's source
with one line changed."""

# expects: plot-default-keys
# loses: attention
from inspect import getsource

import solutions.plots as _solution

_EDIT = ("    key_tokens = query_tokens if key_tokens is None else key_tokens\n", "")
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
