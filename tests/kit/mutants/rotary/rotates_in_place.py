"""Mutant: apply_rotary writes the rotated halves back into x (x[..., :half] = ...) and
returns it: the right values, but the caller's tensor is changed, and autograd refuses it for
queries that require a gradient. rotary_attention calls this apply_rotary: its check does not
charge the change again."""

# expects: changed-input
# loses: reference
import torch

from solutions.attention import scaled_dot_product_attention


def apply_rotary(x, positions, base=10000.0):
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"rotary embeddings pair the features: the head width d = {d} is odd")
    half = d // 2
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = positions.to(device=x.device, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    a, b = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    x[..., :half] = a
    x[..., half:] = b
    return x


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    q, k = apply_rotary(q, positions, base), apply_rotary(k, positions, base)
    return scaled_dot_product_attention(q, k, v, mask)
