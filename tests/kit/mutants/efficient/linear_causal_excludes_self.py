"""Mutant: the prefix sums stop at j < i (an exclusive cumsum)."""

# expects: linear-causal-excludes-self
# loses: linear-causal, linear-cost
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        kv = (phi_k[..., :, None] * v[..., None, :]).cumsum(dim=-3)
        z = phi_k.cumsum(dim=-2)
        kv, z = kv - phi_k[..., :, None] * v[..., None, :], z - phi_k  # drops j = i
        num = (phi_q[..., None] * kv).sum(dim=-2)
        den = (phi_q * z).sum(dim=-1, keepdim=True)
    else:
        num = phi_q @ (phi_k.transpose(-2, -1) @ v)
        den = phi_q @ phi_k.sum(dim=-2)[..., None]
    return num / (den + eps)
