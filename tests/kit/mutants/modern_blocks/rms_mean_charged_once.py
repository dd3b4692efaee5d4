"""Mutant: LayerNorm-style centring in rms_norm, which RMSNorm calls: charged once.

The RMSNorm check sees the module agree with the student's own (wrong) rms_norm and leaves
the mistake to the rms-norm check.
"""

# expects: rms-norm-subtracts-mean
# loses: rms-norm
import torch

from solutions.modern_blocks import *  # noqa: F403
from solutions.modern_blocks import RMSNorm as _RMSNorm


def rms_norm(x, weight=None, eps=1e-6):
    x = x - x.mean(dim=-1, keepdim=True)
    y = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight


class RMSNorm(_RMSNorm):
    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
