"""Mutant: F.dropout with its default training=True: dropout stays on in eval mode."""

# expects: ffn-dropout-in-eval
# loses: ffn-dropout-eval
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.linear1(x)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.linear2(F.dropout(h, self.dropout.p))
