"""Mutant: the positions divided by max_len (p / max_len in [0, 1)): every frequency is
1 / max_len of the docstring's. Each pair still turns by a fixed angle, so only the
frequencies check charges it. The solution's source with one edit."""

# expects: pe-wrong-frequency
# loses: frequencies
from inspect import getsource

import solutions.positional as _solution

_EDIT = (
    "    positions = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)\n",
    "    positions = torch.arange(max_len, dtype=torch.float32)[:, None] / max_len\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
