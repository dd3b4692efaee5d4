"""Mutant: MultiHeadLatentAttention.forward under @torch.no_grad(): the right output, but
none of its projections (or the layers before it) get a gradient."""

# expects: no-gradient
# loses: reference
import torch

from solutions.mla import *  # noqa: F403
from solutions.mla import MultiHeadLatentAttention as _Reference


class MultiHeadLatentAttention(_Reference):
    @torch.no_grad()
    def forward(self, x):
        return super().forward(x)
