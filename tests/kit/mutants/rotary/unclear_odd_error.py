"""Mutant: a ValueError for odd d that does not say which width."""

# expects: rope-odd-width-error-unclear
# loses: odd-width
from solutions.rotary import apply_rotary as _reference
from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    if x.size(-1) % 2:
        raise ValueError("bad input")
    return _reference(x, positions, base)
