"""Mutant: LlamaBlock without the residual around the feed-forward: its output replaces x
(blocks' mistake, made again in the LLaMA block)."""

# expects: block-missing-residual
# loses: block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        x = x + self.attn(self.attn_norm(x), positions, mask)[0]
        return self.ffn(self.ffn_norm(x))
