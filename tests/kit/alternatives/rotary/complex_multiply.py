"""Alternative: each pair (x[i], x[i + d/2]) as a complex number, times e^{i p θ_i}
(view_as_complex on a contiguous (..., d/2, 2) stack, as Meta's code does for its pairs)."""

import torch

from .attention import scaled_dot_product_attention


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2 != 0:
        raise ValueError(f"expected an even head width, got {d}")
    freqs = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(positions.float(), freqs)
    turn = torch.polar(torch.ones_like(angles), angles)
    pairs = torch.stack([x[..., : d // 2], x[..., d // 2 :]], dim=-1).float().contiguous()
    z = torch.view_as_complex(pairs) * turn
    real = torch.view_as_real(z)  # (..., T, d/2, 2)
    return torch.cat([real[..., 0], real[..., 1]], dim=-1).to(x.dtype)


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    return scaled_dot_product_attention(
        apply_rotary(q, positions, base), apply_rotary(k, positions, base), v, mask
    )
