"""Mutant: MiniLlama passes ~causal_mask(T): the past and the diagonal blocked, the future
kept. The causal check names it; the logits check, right but for the mask, leaves it there."""

# expects: llama-no-causal-mask
# loses: causal
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def forward(self, idx):
        B, T = idx.shape
        x = self.token_embed(idx)
        positions = torch.arange(T, device=idx.device)
        mask = ~torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
        for block in self.blocks:
            x = block(x, positions, mask)
        return self.lm_head(self.final_norm(x))
