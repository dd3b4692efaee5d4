"""The one tolerance table. Loosened only with a stated reason, at the call site."""

from typing import TypedDict

import torch


class Tolerance(TypedDict):
    """torch.allclose's keywords: `torch.allclose(a, b, **tolerance(b.dtype))`."""

    atol: float
    rtol: float


# As in PyTorch's own tests (torch.testing._comparison): float32 atol 1e-5, rtol 1.3e-6.
TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float16: {"atol": 1e-3, "rtol": 1e-3},
    torch.bfloat16: {"atol": 1e-5, "rtol": 1.6e-2},
    torch.float32: {"atol": 1e-5, "rtol": 1.3e-6},
    torch.float64: {"atol": 1e-7, "rtol": 1e-7},
}


def tolerance(dtype: torch.dtype) -> Tolerance:
    return TOLERANCES.get(dtype, {"atol": 0.0, "rtol": 0.0}).copy()
