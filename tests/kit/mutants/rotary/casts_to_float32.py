"""Mutant: x.float() first, so a float64 x comes back as float32."""

# expects: rope-dtype-not-kept
# loses: float64
from solutions.rotary import apply_rotary as _reference
from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    return _reference(x.float(), positions, base)
