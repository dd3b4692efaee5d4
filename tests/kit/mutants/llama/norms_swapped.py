"""Mutant: ffn_norm before the attention, attn_norm before the feed-forward."""

# expects: block-norms-swapped
# loses: block-attention, block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        x = x + self.attn(self.ffn_norm(x), positions, mask)[0]
        return x + self.ffn(self.attn_norm(x))
