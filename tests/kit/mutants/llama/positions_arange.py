"""Mutant: the rows are rotated at 0 .. T-1 whatever positions says."""

# expects: llama-positions-ignored
# loses: rotary
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        return super().forward(x, torch.arange(x.size(1), device=x.device), mask)
