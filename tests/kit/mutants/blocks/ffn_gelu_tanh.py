"""Mutant: GPT-2's tanh approximation of GELU where the exact one is asked."""

# expects: ffn-gelu-tanh
# loses: ffn-gelu
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.linear1(x)
        h = F.gelu(h, approximate="tanh") if self.activation == "gelu" else F.relu(h)
        return self.linear2(self.dropout(h))
