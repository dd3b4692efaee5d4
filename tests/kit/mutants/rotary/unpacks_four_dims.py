"""Mutant: apply_rotary unpacks x.shape into four names, as if x were always (B, H, T, d):
right on attention's queries and keys, a crash on (T, d) or (B, T, d), which the docstring's
(..., T, d) allows."""

# expects: shape-unpacked-fixed-rank
# loses: batch-dims
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    B, H, T, d = x.shape
    if d % 2:
        raise ValueError(f"the head width d = {d} is odd")
    half = d // 2
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = positions.to(device=x.device, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
