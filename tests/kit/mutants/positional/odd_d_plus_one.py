"""Mutant: for odd D, builds the table for D + 1 columns and cuts the last one off, so the
frequencies use D + 1 in the exponent. Even D is right: only the odd-D check is charged."""

# expects: pe-odd-d-plus-one
# loses: odd-d
from solutions.positional import PositionalEncoding  # noqa: F401
from solutions.positional import sinusoidal_encoding as _even_only


def sinusoidal_encoding(max_len, d_model):
    if d_model % 2:
        return _even_only(max_len, d_model + 1)[:, :d_model]
    return _even_only(max_len, d_model)
