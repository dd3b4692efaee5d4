"""Mutant: FeedForward never applies its dropout (right in eval mode only)."""

# expects: ffn-dropout-ignored
# loses: ffn-dropout-train
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.linear1(x)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.linear2(h)
