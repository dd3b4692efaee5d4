"""Mutant: a post-norm block, x = norm(x + sublayer(x)), the 2017 layout."""

# expects: llama-post-norm
# loses: block-attention, block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        x = self.attn_norm(x + self.attn(x, positions, mask)[0])
        return self.ffn_norm(x + self.ffn(x))
