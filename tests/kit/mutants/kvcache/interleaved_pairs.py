"""Mutant: rotary embeddings in Meta's interleaved convention, written inline: features
(2i, 2i + 1) turn together, where apply_rotary (which CachedAttention's docstring calls) pairs
i with i + d/2. The solution's source with one line changed."""

# expects: rope-interleaved-pairs
from inspect import getsource

import torch

import solutions.kvcache as _solution


def _interleaved(t, positions, base):
    d = t.size(-1)
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=t.device) / d)
    angles = positions.to(t.device, torch.float32)[:, None] * freq  # (T, d/2)
    cos, sin = angles.cos(), angles.sin()
    even, odd = t[..., 0::2].float(), t[..., 1::2].float()
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(t.dtype)


_EDIT = (
    "q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)",
    "q, k = _interleaved(q, positions, self.base), _interleaved(k, positions, self.base)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
