"""Mutant: lm_head keeps its own weight (a copy of the embedding's values is not tying)."""

# expects: gpt-no-weight-tying
# loses: weight-tying
from torch import nn

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_head.weight = nn.Parameter(self.token_embed.weight.detach().clone())
