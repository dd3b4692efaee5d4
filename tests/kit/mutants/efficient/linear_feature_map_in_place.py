"""Mutant: applies the feature map in place (F.elu(q, inplace=True) + 1): the right values,
but the caller's q and k hold elu(q) and elu(k) after the call, and autograd refuses the
in-place change of a tensor that requires a gradient. Charged once, as changed-input, in the
check that runs linear_attention's backward pass; every other call gets its own copies."""

# expects: changed-input
# loses: linear
import torch
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q, inplace=True) + 1, F.elu(k, inplace=True) + 1
    if causal:
        kv = torch.cumsum(phi_k[..., :, None] * v[..., None, :], dim=-3)
        num = (phi_q[..., None] * kv).sum(dim=-2)
        den = (phi_q * torch.cumsum(phi_k, dim=-2)).sum(dim=-1, keepdim=True)
    else:
        num = phi_q @ (phi_k.transpose(-2, -1) @ v)
        den = phi_q @ phi_k.sum(dim=-2)[..., None]
    return num / (den + eps)
