"""Mutant: sigmoid instead of SiLU on the gate (the original GLU)."""

# expects: swiglu-sigmoid-for-silu
# loses: swiglu
import torch

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


class SwiGLU(_SwiGLU):
    def forward(self, x):
        return self.w_down(torch.sigmoid(self.w_gate(x)) * self.w_up(x))
