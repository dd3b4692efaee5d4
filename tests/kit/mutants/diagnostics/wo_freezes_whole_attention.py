"""Mutant: fix_wo_to_identity freezes the whole attention module (W_Q, W_K and W_V too), so
the 'identity' run learns nothing but the embeddings. It was named a crash with a hint about
shapes (the check's optimiser got no parameter) and, in the experiment, runs that "do not
start from the same weights". The solution's source with one line changed (wo_experiment
calls this fix_wo_to_identity)."""

# expects: wo-freezes-more
# loses: wo-identity, wo-experiment
from inspect import getsource

import solutions.diagnostics as _solution

_EDIT = ("    for p in attn.w_o.parameters():\n", "    for p in attn.parameters():\n")
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
