"""Alternative: a 2 x 2 rotation matrix per (position, pair), applied with einsum; the
frequencies from exp and log, angles in float64."""

import math

import torch

from .attention import scaled_dot_product_attention


def apply_rotary(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"d = {d}: rotary embeddings need an even width")
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = torch.exp(-2.0 * i / d * math.log(base))
    a = positions.to(torch.float64).unsqueeze(-1) * theta  # (T, d/2)
    c, s = torch.cos(a), torch.sin(a)
    rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = torch.stack([x[..., : d // 2], x[..., d // 2 :]], dim=-1)  # (..., T, d/2, 2)
    out = torch.einsum("tpab,...tpb->...tpa", rot.to(x.dtype), pairs)
    return torch.cat([out[..., 0], out[..., 1]], dim=-1)


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    rq = apply_rotary(q, positions, base=base)
    rk = apply_rotary(k, positions, base=base)
    return scaled_dot_product_attention(rq, rk, v, mask=mask)
