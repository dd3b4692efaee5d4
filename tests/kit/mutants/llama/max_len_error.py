"""Mutant: forward refuses T > max_len, as MiniGPT must (MiniLlama has no position table)."""

# expects: llama-max-len-limit
# loses: shapes
from solutions.llama import *  # noqa: F403
from solutions.llama import MiniLlama as _Reference


class MiniLlama(_Reference):
    def forward(self, idx):
        if idx.size(1) > self.max_len:
            raise ValueError(f"T = {idx.size(1)} > max_len = {self.max_len}")
        return super().forward(idx)
