"""Mutant: MiniGPT.forward under @torch.no_grad(): the right logits, but training has
nothing to follow back (loss.backward() raises)."""

# expects: no-gradient
# loses: logits
import torch

from solutions.gpt import *  # noqa: F403
from solutions.gpt import MiniGPT as _Reference


class MiniGPT(_Reference):
    @torch.no_grad()
    def forward(self, idx, return_attn=False):
        return super().forward(idx, return_attn=return_attn)
