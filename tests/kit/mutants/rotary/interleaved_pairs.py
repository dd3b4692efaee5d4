"""Mutant: pairs neighbouring features (2i, 2i + 1), the interleaved convention (Meta's LLaMA
code, GPT-J), where the docstring fixes the halves (i, i + d/2)."""

# expects: rope-interleaved-pairs
# loses: reference
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = positions.float()[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
