"""Mutant: the table is computed in float64 and returned as float64 (the docstring promises
float32). The module's buffer is the solution's: only the table checks are charged."""

# expects: pe-table-not-float32
# loses: encoding
from solutions.positional import PositionalEncoding  # noqa: F401
from solutions.positional import sinusoidal_encoding as _float32


def sinusoidal_encoding(max_len, d_model):
    return _float32(max_len, d_model).double()
