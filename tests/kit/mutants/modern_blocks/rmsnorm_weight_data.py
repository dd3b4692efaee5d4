"""Mutant: RMSNorm.forward uses self.weight.data: the same values, but the weight gets no
gradient and never learns."""

# expects: no-gradient
# loses: rms-norm-module
import torch
from torch import nn

from solutions.modern_blocks import SwiGLU, rms_norm  # noqa: F401


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight.data, self.eps)
