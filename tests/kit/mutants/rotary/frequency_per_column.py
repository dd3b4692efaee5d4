"""Mutant: one frequency per column, base^(-j/d) for j = 0 .. d-1, used on full width with
rotate_half: the two features of a pair turn by different angles."""

# expects: rope-pair-frequency
# loses: reference, relative
import torch

from solutions.rotary import rotary_attention  # noqa: F401


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"head width d = {d} is odd")
    inv_freq = base ** (-torch.arange(d, dtype=torch.float32) / d)
    emb = positions.float()[:, None] * inv_freq  # (T, d)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()
