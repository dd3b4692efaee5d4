"""Mutant: each new token goes onto the cropped context instead of the whole sequence: once
the sequence is longer than max_len, its first tokens are lost. The solution's source with
one line changed."""

# expects: gen-wrong-context
# loses: generate-crop
from inspect import getsource

import solutions.gpt as _solution

_EDIT = (
    "idx = torch.cat([idx, next_id], dim=1)  # (B, T + 1)",
    "idx = torch.cat([context, next_id], dim=1)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
