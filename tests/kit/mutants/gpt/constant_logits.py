"""Mutant: forward returns zeros of the right shape, whatever the tokens (a property check
that compared a model only with itself would pass it)."""

# expects: gpt-ignores-input
import torch

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        logits, attn = super().forward(idx, return_attn=True)
        logits = torch.zeros_like(logits)
        return (logits, attn) if return_attn else logits
