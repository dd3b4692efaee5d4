"""Mutant: MiniLlama builds its causal mask by hand with triu(0), which blocks the diagonal too
(masks' mistake, made again where the model builds its own mask): each token cannot see
itself, and the first sees nothing."""

# expects: causal-blocks-diagonal
# loses: logits
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def forward(self, idx):
        B, T = idx.shape
        x = self.token_embed(idx)
        positions = torch.arange(T, device=idx.device)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu()
        for block in self.blocks:
            x = block(x, positions, mask)
        return self.lm_head(self.final_norm(x))
