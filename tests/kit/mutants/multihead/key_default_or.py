"""Mutant: the defaults written `key = key or query` and `value = value or key`: Python asks
each tensor for one True or False and torch raises. Was a [crash] with a hint about shapes
that do not fit; now named kit-wide (probing.crash). The solution's source with one edit."""

# expects: tensor-as-bool
from inspect import getsource

import solutions.multihead as _solution

_EDIT = (
    "        key = query if key is None else key\n"
    "        value = key if value is None else value\n",
    "        key = key or query\n        value = value or key\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
