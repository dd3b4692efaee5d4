"""Mutant: causal linear attention a block of queries at a time, each block against every key
before it again: no (T, T) tensor, so memory stays linear, but the time grows with T²."""

# expects: linear-time-quadratic
# loses: linear-cost

import torch
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        kv = phi_k.transpose(-2, -1) @ v
        return (phi_q @ kv) / (phi_q @ phi_k.sum(dim=-2)[..., None] + eps)
    T, block, outs = q.size(-2), 128, []
    for a in range(0, T, block):
        b = min(a + block, T)
        A = phi_q[..., a:b, :] @ phi_k[..., :b, :].transpose(-2, -1)  # every earlier key again
        later = torch.arange(b)[None, :] > torch.arange(a, b)[:, None]
        A = A.masked_fill(later, 0.0)
        outs.append((A @ v[..., :b, :]) / (A.sum(dim=-1, keepdim=True) + eps))
    return torch.cat(outs, dim=-2)
