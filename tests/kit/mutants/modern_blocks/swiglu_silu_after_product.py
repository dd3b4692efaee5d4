"""Mutant: SiLU applied to the product of both branches."""

# expects: swiglu-silu-after-product
# loses: swiglu
import torch.nn.functional as F

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import SwiGLU as _SwiGLU


class SwiGLU(_SwiGLU):
    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x) * self.w_up(x)))
