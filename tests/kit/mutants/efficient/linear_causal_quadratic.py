"""Mutant: causal linear attention through a masked (T, T) kernel matrix: right values,
quadratic memory."""

# expects: linear-builds-TxT
# loses: linear-cost, linear-cost-inside
import torch
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        T = q.size(-2)
        A = (phi_q @ phi_k.transpose(-2, -1)).masked_fill(
            torch.ones(T, T, dtype=torch.bool).triu(1), 0.0
        )
        return (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)
    return (phi_q @ (phi_k.transpose(-2, -1) @ v)) / (phi_q @ phi_k.sum(dim=-2)[..., None] + eps)
