"""Mutant: the blocks are built with num_heads key/value heads, whatever num_kv_heads says."""

# expects: llama-kv-heads
from torch import nn

from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def __init__(
        self,
        vocab_size,
        d_model=128,
        num_heads=4,
        num_kv_heads=2,
        num_layers=4,
        d_ff=344,
        max_len=128,
        base=10000.0,
        eps=1e-6,
    ):
        super().__init__(
            vocab_size, d_model, num_heads, num_kv_heads, num_layers, d_ff, max_len, base, eps
        )
        self.blocks = nn.ModuleList(
            LlamaBlock(d_model, num_heads, num_heads, d_ff, base, eps) for _ in range(num_layers)
        )
