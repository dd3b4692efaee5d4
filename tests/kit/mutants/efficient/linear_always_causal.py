"""Mutant: linear_attention takes the running (causal) sums whatever causal says."""

# expects: causal-always-applied
# loses: linear, linear-cost
import torch
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    kv = torch.cumsum(phi_k[..., :, None] * v[..., None, :], dim=-3)
    z = torch.cumsum(phi_k, dim=-2)
    num = (phi_q[..., None] * kv).sum(dim=-2)
    den = (phi_q * z).sum(dim=-1, keepdim=True)
    return num / (den + eps)
