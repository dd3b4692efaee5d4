"""Mutant: x · cos(p·θ) without the sin term that mixes the pair."""

# expects: rope-missing-sin-term
# loses: reference, relative
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta
    return x * torch.cat([angles, angles], dim=-1).cos().to(x.dtype)
