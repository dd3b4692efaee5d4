"""Mutant: the blocks run without the causal mask."""

# expects: llama-no-causal-mask
# loses: causal
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def forward(self, idx):
        x = self.token_embed(idx)
        positions = torch.arange(idx.size(1))
        for block in self.blocks:
            x = block(x, positions)
        return self.lm_head(self.final_norm(x))
