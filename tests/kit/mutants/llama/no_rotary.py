"""Mutant: no rotary embeddings at all: plain grouped-query attention, blind to positions."""

# expects: llama-no-rotary
# loses: rotary
from solutions.gqa import GroupedQueryAttention
from solutions.llama import *  # noqa: F403
from solutions.llama import RotaryAttention as _Reference


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        return GroupedQueryAttention.forward(self, x, mask)
