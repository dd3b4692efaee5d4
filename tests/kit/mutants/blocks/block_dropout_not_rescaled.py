"""Mutant: the block zeroes sub-layer outputs with its own mask but forgets to divide the kept
values by 1 - p."""

# expects: block-dropout-misplaced
# loses: block-dropout-train
import torch

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def _drop(self, h):
        if not self.training:
            return h
        return h * (torch.rand_like(h) >= self.dropout.p)

    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self._drop(h)
            return x + self._drop(self.ffn(self.norm2(x))), weights
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(x + self._drop(h))
        return self.norm2(x + self._drop(self.ffn(x))), weights
