"""Mutant: pe stored as the (max_len, D) table, without the leading batch axis (forward
slices it as pe[:T]): the buffer check's shape. A saved state_dict of the docstring's shape
does not load; before, this was called "not in the state_dict". The solution's source with
three edits."""

# expects: wrong-shape
# loses: buffer
from inspect import getsource

import solutions.positional as _solution

_EDITS = (
    ("sinusoidal_encoding(max_len, d_model)[None]", "sinusoidal_encoding(max_len, d_model)"),
    ("max_len = self.pe.size(1)", "max_len = self.pe.size(0)"),
    ("self.pe[:, :T]", "self.pe[None, :T]"),
)
_source = getsource(_solution)
for _old, _new in _EDITS:
    assert _source.count(_old) == 1, _old
    _source = _source.replace(_old, _new)
exec(compile(_source, __file__, "exec"))
