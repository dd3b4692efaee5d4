"""Alternative: PyTorch's own F.rms_norm, and SwiGLU written with einsum on flattened rows."""

import torch
import torch.nn.functional as F

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


def rms_norm(x, weight=None, eps=1e-6):
    return F.rms_norm(x, (x.size(-1),), weight, eps)


class SwiGLU(_SwiGLU):
    def forward(self, x):
        rows = x.reshape(-1, x.size(-1))  # (N, D)
        gate = torch.einsum("nd,fd->nf", rows, self.w_gate.weight)
        up = torch.einsum("nd,fd->nf", rows, self.w_up.weight)
        out = torch.einsum("nf,df->nd", F.silu(gate) * up, self.w_down.weight)
        return out.reshape(x.shape)
