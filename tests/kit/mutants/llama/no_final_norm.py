"""Mutant: the logits are lm_head(x), without the final RMSNorm."""

# expects: llama-no-final-norm
# loses: head
from torch import nn

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def forward(self, idx):
        norm, self.final_norm = self.final_norm, nn.Identity()
        try:
            return super().forward(idx)
        finally:
            self.final_norm = norm
