"""Mutant: the head tied to the embedding, as llama2.c ties it
(self.token_embed.weight = self.lm_head.weight). MiniLlama's docstring asks for an untied head,
a (V, D) weight of its own: a convention difference, named once, where the logits are checked
with the grader's weights; the model learns as well (its training is credited), and its
layers' key/value widths are right."""

# expects: llama-tied-head
# loses: logits
from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.token_embed.weight = self.lm_head.weight  # one (V, D) matrix, two names
