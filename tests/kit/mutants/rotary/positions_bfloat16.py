"""Mutant: the positions are turned into bfloat16 (the activations' dtype in mixed-precision
code) before the angles: exact up to 256, rounded beyond."""

# expects: rope-positions-rounded
# loses: closed-form
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = positions.to(torch.bfloat16).float()[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
