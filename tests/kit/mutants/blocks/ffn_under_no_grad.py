"""Mutant: FeedForward.forward under torch.no_grad(): the right output, but neither its
weights nor the layers before it get a gradient."""

# expects: no-gradient
# loses: ffn-gelu
import torch

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        with torch.no_grad():
            return super().forward(x)
