"""Mutant (slow: a training run): forward runs under torch.no_grad, so nothing can learn.

Its logits are right: only the training check sees the mistake."""

# expects: llama-not-trainable
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    @torch.no_grad()
    def forward(self, idx):
        return super().forward(idx)
