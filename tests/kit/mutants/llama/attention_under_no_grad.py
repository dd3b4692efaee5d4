"""Mutant: RotaryAttention.forward under @torch.no_grad() (the rotation tables need no
gradient, so why track?): the right output, but w_q, w_k, w_v and w_o never learn. The
blocks and the model use this attention: their checks do not charge the cut again."""

# expects: no-gradient
# loses: attention
import torch

from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _Block
from solutions.llama import MiniLlama as _Model
from solutions.llama import RotaryAttention as _Attention


class RotaryAttention(_Attention):
    @torch.no_grad()
    def forward(self, x, positions, mask=None):
        return super().forward(x, positions, mask)


class LlamaBlock(_Block):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.attn.__class__ = RotaryAttention  # the same module, with this forward


class MiniLlama(_Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for block in self.blocks:
            block.__class__ = LlamaBlock
            block.attn.__class__ = RotaryAttention
