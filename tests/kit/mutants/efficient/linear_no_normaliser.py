"""Mutant: the numerator only; the per-query normaliser is forgotten."""

# expects: linear-no-normaliser
# loses: linear, linear-causal, linear-cost
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        kv = (phi_k[..., :, None] * v[..., None, :]).cumsum(dim=-3)
        return (phi_q[..., None] * kv).sum(dim=-2)
    return phi_q @ (phi_k.transpose(-2, -1) @ v)
