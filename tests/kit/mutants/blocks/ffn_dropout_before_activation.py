"""Mutant: FeedForward drops the pre-activations, act(dropout(linear1(x))). With GELU this is
not the same as dropping the activations."""

# expects: ffn-dropout-misplaced
# loses: ffn-dropout-train
import torch.nn.functional as F

from solutions.blocks import FeedForward as _Reference
from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(_Reference):
    def forward(self, x):
        h = self.dropout(self.linear1(x))
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.linear2(h)
