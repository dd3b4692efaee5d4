"""Mutant: torch.multinomial without the generator it was given: the draws come from torch's
global generator, and a seeded run cannot be reproduced. The solution's source with one line
changed."""

# expects: gen-generator-unused
# loses: generate-sample
from inspect import getsource

import solutions.gpt as _solution

_EDIT = (
    "next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)",
    "next_id = torch.multinomial(probs, 1)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
