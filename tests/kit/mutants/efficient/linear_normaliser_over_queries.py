"""Mutant: the normaliser sums over the queries: den_i = phi(k_i)ᵀ Σ_l phi(q_l)."""

# expects: linear-normaliser-wrong-axis
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        kv = (phi_k[..., :, None] * v[..., None, :]).cumsum(dim=-3)
        num = (phi_q[..., None] * kv).sum(dim=-2)
    else:
        num = phi_q @ (phi_k.transpose(-2, -1) @ v)
    den = phi_k @ phi_q.sum(dim=-2)[..., None]
    if causal:
        den = (phi_k * phi_q.flip(-2).cumsum(dim=-2).flip(-2)).sum(dim=-1, keepdim=True)
    return num / (den + eps)
