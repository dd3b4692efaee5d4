"""The one tolerance table. Loosened only with a stated reason, at the call site."""

import torch

# As in PyTorch's own tests (torch.testing._comparison): float32 atol 1e-5, rtol 1.3e-6.
TOLERANCES = {
    torch.float16: {"atol": 1e-3, "rtol": 1e-3},
    torch.bfloat16: {"atol": 1e-5, "rtol": 1.6e-2},
    torch.float32: {"atol": 1e-5, "rtol": 1.3e-6},
    torch.float64: {"atol": 1e-7, "rtol": 1e-7},
}


def tolerance(dtype: torch.dtype) -> dict[str, float]:
    return dict(TOLERANCES.get(dtype, {"atol": 0.0, "rtol": 0.0}))
