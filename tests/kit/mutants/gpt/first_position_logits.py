"""Mutant: the next token is chosen from the first position's logits, logits[:, 0], not the
last position's. The solution's source with one line changed."""

# expects: gen-first-position-logits
# loses: generate-greedy
from inspect import getsource

import solutions.gpt as _solution

_EDIT = (
    "logits = model(context)[:, -1, :]  # (B, T, V) -> (B, V)",
    "logits = model(context)[:, 0, :]",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
