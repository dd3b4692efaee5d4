"""Mutant: halves pairs (rotate_half) with the angles laid out for interleaved pairs
(repeat_interleave): code mixed from the two conventions."""

# expects: rope-frequency-layout-mismatch
# loses: reference, relative
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    emb = (positions.float()[:, None] * theta).repeat_interleave(2, dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()
