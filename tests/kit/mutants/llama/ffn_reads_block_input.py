"""Mutant: LlamaBlock's feed-forward reads the block's input x instead of h, the stream after
the attention's sum: GPT-J's parallel block, not LLaMA's sequential one."""

# expects: block-ffn-reads-block-input
# loses: block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        h = x + self.attn(self.attn_norm(x), positions, mask)[0]
        return h + self.ffn(self.ffn_norm(x))
