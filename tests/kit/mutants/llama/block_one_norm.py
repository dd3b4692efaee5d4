"""Mutant: LlamaBlock uses attn_norm before both sub-layers (blocks' mistake, made again in
the LLaMA block: each sub-layer has its own norm)."""

# expects: block-one-norm-for-both
# loses: block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        x = x + self.attn(self.attn_norm(x), positions, mask)[0]
        return x + self.ffn(self.attn_norm(x))
