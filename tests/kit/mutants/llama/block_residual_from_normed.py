"""Mutant: LlamaBlock normalises x in place, then adds each sub-layer to the normalised x
(x = norm(x); x = x + sublayer(x)): blocks' mistake, made again in the LLaMA block."""

# expects: block-residual-from-normed
# loses: block-attention, block-ffn
from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Reference


class LlamaBlock(_Reference):
    def forward(self, x, positions, mask=None):
        x = self.attn_norm(x)
        x = x + self.attn(x, positions, mask)[0]
        x = self.ffn_norm(x)
        return x + self.ffn(x)
