"""Mutant: sin and cos swapped (x·sin + rotate_half(x)·cos): every row is still rotated, by
π/2 - p·θ_i. Before, it lost the base and float64 checks too, which it satisfies: they now
judge the student's own runs."""

# expects: wrong-values
# loses: reference, positions, closed-form
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * sin - x2 * cos, x2 * sin + x1 * cos], dim=-1)
