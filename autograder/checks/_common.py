"""Small helpers shared by the checks of several modules."""

from __future__ import annotations

import torch

from ..core import WRONG_TYPE, Failure


def randn(gen: torch.Generator, *shape: int, dtype=torch.float32, scale: float = 1.0):
    """Standard normal draws on the CPU from `gen` (deterministic), times `scale`."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64).mul(scale).to(dtype)


def pair(result, what: str, names: str = "(out, weights)"):
    """Unpack a student function's 2-tuple result, or fail saying what it returned."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = f"a {type(result).__name__}"
        if isinstance(result, (tuple, list)):
            got += f" of length {len(result)}"
        raise Failure(WRONG_TYPE, what=what, expected=f"a pair {names}", got=got)
    return result
