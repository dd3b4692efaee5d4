"""Mutant: no gate, w_down(silu(w_up x))."""

# expects: swiglu-no-gate
# loses: swiglu
import torch.nn.functional as F

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


class SwiGLU(_SwiGLU):
    def forward(self, x):
        return self.w_down(F.silu(self.w_up(x)))
