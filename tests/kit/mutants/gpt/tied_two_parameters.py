"""Mutant: lm_head gets a new Parameter over the embedding's storage: the values are shared,
but parameters() counts the (V, D) matrix twice and each use has its own gradient."""

# expects: gpt-no-weight-tying
# loses: weight-tying
from torch import nn

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_head.weight = nn.Parameter(self.token_embed.weight.data)
