"""Mutant: the positional encoding is left out: the blocks see the scaled token embeddings
alone."""

# expects: gpt-no-positions
# loses: logits
import torch
from torch import nn

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference
from solutions.masks import causal_mask


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        B, T = idx.shape
        if T > self.max_len:
            raise ValueError(f"T = {T} > max_len = {self.max_len}")
        x = self.token_embed(idx) * self.d_model**0.5
        mask = causal_mask(T, device=idx.device)
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask=mask)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))
        return (logits, attn) if return_attn else logits
