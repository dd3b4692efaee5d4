"""Mutant: FeedForward drops its output, after linear2, instead of the hidden activations."""

# expects: ffn-dropout-misplaced
# loses: ffn-dropout-train
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.linear1(x)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.dropout(self.linear2(h))
