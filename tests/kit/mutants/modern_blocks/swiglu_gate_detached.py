"""Mutant: SwiGLU detaches its gate: the same output, but w_gate gets no gradient."""

# expects: no-gradient
# loses: swiglu
import torch.nn.functional as F

from solutions.modern_blocks import RMSNorm, rms_norm  # noqa: F401
from solutions.modern_blocks import SwiGLU as _Reference


class SwiGLU(_Reference):
    def forward(self, x):
        gate = F.silu(self.w_gate(x)).detach()
        return self.w_down(gate * self.w_up(x))
