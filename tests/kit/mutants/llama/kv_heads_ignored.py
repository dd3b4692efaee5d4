"""Mutant: the blocks are built with num_heads key/value heads, whatever num_kv_heads says."""

# expects: llama-kv-heads
from torch import nn

from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def __init__(self, vocab_size, **config):
        super().__init__(vocab_size, **config)
        sizes = [config[k] for k in ("d_model", "num_heads", "num_heads", "d_ff", "base", "eps")]
        self.blocks = nn.ModuleList(LlamaBlock(*sizes) for _ in self.blocks)
