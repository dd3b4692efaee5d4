"""Attack as a mutant: causal linear attention through a masked (T, T) kernel matrix, run with
torch's dispatch modes switched off so that the op recorder sees nothing but the final copy."""

# expects: computation-not-recorded
# loses: linear-cost, linear-cost-inside
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401


def linear_attention(q, k, v, causal=False, eps=1e-6):
    with _disable_current_modes():
        A = (F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1)  # (..., T, T)
        if causal:
            A = A * torch.ones_like(A).tril()
        out = (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)
    return out.clone()
