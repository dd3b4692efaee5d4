"""Trusted rotary embeddings, written as complex multiplication (torch.polar).

The pair (x[i], x[i + d/2]) is the complex number x[i] + 1j·x[i + d/2]; rotating it by the
angle p·θ_i is multiplying by e^{1j·p·θ_i}. PyTorch has no rotary built-in, so this is an
implementation of its own (trusted.NOT_IN_STUDENT_COPY); tests/kit/test_rotary.py proves it
equal to the solution. The angles are computed in float64.
"""

import torch

from .attention import scaled_dot_product_attention


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"rotary embeddings need an even head width, got d = {d}")
    half = d // 2
    exponents = torch.arange(half, dtype=torch.float64, device=x.device) * (2.0 / d)
    theta = torch.pow(torch.tensor(float(base), dtype=torch.float64, device=x.device), -exponents)
    angles = torch.outer(positions.to(device=x.device, dtype=torch.float64), theta)
    turn = torch.polar(torch.ones_like(angles), angles)  # (T, d/2) complex128
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * turn
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q, k = apply_rotary(q, positions, base), apply_rotary(k, positions, base)
    return scaled_dot_product_attention(q, k, v, mask)
