"""Mutant: the token embeddings are multiplied by √D, as MiniGPT does."""

# expects: llama-embed-scale
# loses: logits
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference
from solutions.llama import causal_mask


class MiniLlama(_Reference):
    def forward(self, idx):
        T = idx.size(1)
        x = self.token_embed(idx) * self.token_embed.embedding_dim**0.5
        positions, mask = torch.arange(T), causal_mask(T)
        for block in self.blocks:
            x = block(x, positions, mask)
        return self.lm_head(self.final_norm(x))
