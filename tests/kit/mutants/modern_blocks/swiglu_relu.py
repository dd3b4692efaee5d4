"""Mutant: ReLU instead of SiLU on the gate (ReGLU)."""

# expects: swiglu-relu-for-silu
# loses: swiglu
import torch.nn.functional as F

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


class SwiGLU(_SwiGLU):
    def forward(self, x):
        return self.w_down(F.relu(self.w_gate(x)) * self.w_up(x))
