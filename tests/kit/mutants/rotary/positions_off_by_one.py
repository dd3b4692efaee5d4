"""Mutant: positions counted from 1 (angles (p + 1)·θ_i). It uses the base and keeps float64,
and the rotation is still relative: only the checks of the values charge it."""

# expects: wrong-values
# loses: reference, positions, closed-form
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = (positions.double() + 1)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
