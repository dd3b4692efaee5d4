"""Mutant: apply_rotary writes the rotated halves into x and returns it: right values, but the
caller's tensor is changed in place (a query rotated twice, a cache's keys overwritten), and
autograd refuses it for queries that require a gradient. rotary_attention is the solution's,
calling this apply_rotary: its check does not charge the change again."""

# expects: changed-input
# loses: reference
import types

import torch

from solutions import rotary as _solution


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"the head width d = {d} is odd")
    half = d // 2
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = positions.to(device=x.device, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half].clone(), x[..., half:].clone()
    x[..., :half] = x1 * cos - x2 * sin
    x[..., half:] = x2 * cos + x1 * sin
    return x


rotary_attention = types.FunctionType(
    _solution.rotary_attention.__code__,
    {**vars(_solution), "apply_rotary": apply_rotary},  # the solution's, over this apply_rotary
    argdefs=_solution.rotary_attention.__defaults__,
)
