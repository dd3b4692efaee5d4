"""Alternative: torch.rsqrt of the mean square; SiLU written out as h * sigmoid(h); RMSNorm
computes its own formula instead of calling rms_norm."""

import torch

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import RMSNorm as _RMSNorm
from solutions.modern_blocks import SwiGLU as _SwiGLU


def rms_norm(x, weight=None, eps=1e-6):
    y = x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = weight * y
    return y


class RMSNorm(_RMSNorm):
    def forward(self, x):
        inv = torch.rsqrt(x.square().mean(-1, keepdim=True) + self.eps)
        return self.weight * (x * inv)


class SwiGLU(_SwiGLU):
    def forward(self, x):
        g = self.w_gate(x)
        return self.w_down(g * torch.sigmoid(g) * self.w_up(x))
