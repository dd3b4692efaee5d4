"""Mutant: RMSNorm uses rms_norm's default eps, not its own."""

# expects: rmsnorm-module-eps-ignored
# loses: rms-norm-module
from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import RMSNorm as _RMSNorm
from solutions.modern_blocks import rms_norm


class RMSNorm(_RMSNorm):
    def forward(self, x):
        return rms_norm(x, self.weight)
