"""Mutant: the gate on the wrong branch, silu(w_up x) * w_gate x."""

# expects: swiglu-gate-on-wrong-branch
# loses: swiglu
import torch.nn.functional as F

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


class SwiGLU(_SwiGLU):
    def forward(self, x):
        return self.w_down(F.silu(self.w_up(x)) * self.w_gate(x))
