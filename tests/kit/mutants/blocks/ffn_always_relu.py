"""Mutant: ReLU whatever activation is asked."""

# expects: ffn-wrong-activation
# loses: ffn-gelu
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.linear1(x)
        return self.linear2(self.dropout(F.relu(h)))
