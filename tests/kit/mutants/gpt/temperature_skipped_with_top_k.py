"""Mutant: the logits are divided by the temperature only when top_k is None, so top-k
sampling ignores the temperature. The top-k check runs at temperatures other than 1 (2 and
0.5), the temperature check without top_k. The solution's source with one edit."""

# expects: gen-temperature-after-softmax
# loses: generate-top-k
from inspect import getsource

import solutions.gpt as _solution

_EDIT = (
    "                    logits = logits / temperature\n",
    "                    if top_k is None:\n"
    "                        logits = logits / temperature\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
