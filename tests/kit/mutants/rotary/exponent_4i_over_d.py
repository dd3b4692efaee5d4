"""Mutant: θ_i = base^(-4i/d): the even indices torch.arange(0, d, 2) are doubled again, so
the exponent counts the factor 2 twice."""

# expects: rope-exponent-4i-over-d
# loses: reference
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-2 * torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
