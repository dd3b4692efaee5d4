"""Mutant: causal linear attention through its (T, T) kernel matrix computed in numpy, all at
once: right values, and torch's recorders see only the result; the memory measured from
outside the process sees the (T, T). The trip through numpy also cuts the graph: the linear
check charges that, a second mistake of the same lines."""

# expects: linear-peak-memory-quadratic
# loses: linear, linear-cost
import numpy as np
import torch
import torch.nn.functional as F

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = (F.elu(q) + 1).numpy(), (F.elu(k) + 1).numpy()
    A = phi_q @ np.swapaxes(phi_k, -1, -2)  # (..., T, T)
    if causal:
        A = np.tril(A)
    out = (A @ v.numpy()) / (A.sum(axis=-1, keepdims=True) + eps)
    return torch.from_numpy(out).to(q.dtype)
