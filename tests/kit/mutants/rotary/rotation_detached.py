"""Mutant: apply_rotary writes the rotated halves into a detached copy of x, in place: the
right values, but no gradient reaches x (the queries and keys never learn). rotary_attention
calls this apply_rotary: its check does not charge the cut again."""

# expects: no-gradient
# loses: reference
import types

import torch

from solutions import rotary as _solution


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"rotary embeddings pair the features: the head width d = {d} is odd")
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = positions.to(device=x.device, dtype=torch.float64)[:, None] * inv
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    out = x.detach().clone()
    out[..., : d // 2] = x1 * cos - x2 * sin
    out[..., d // 2 :] = x2 * cos + x1 * sin
    return out.detach()


rotary_attention = types.FunctionType(
    _solution.rotary_attention.__code__,
    {**vars(_solution), "apply_rotary": apply_rotary},  # the solution's, over this apply_rotary
    argdefs=_solution.rotary_attention.__defaults__,
)
