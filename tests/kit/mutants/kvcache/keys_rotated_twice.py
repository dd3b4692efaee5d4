"""Mutant: rotated keys are cached, then the whole cache is rotated again at 0 .. S-1 (two
conventions mixed). The solution's source with one line changed."""

# expects: kv-keys-rotated-twice
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "key_positions = torch.arange(k.size(2), device=x.device)",
    "key_positions = torch.arange(k.size(2), device=x.device); k = apply_rotary(k, "
    "key_positions, self.base)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
