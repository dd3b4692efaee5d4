"""Mutant: F.dropout with its default training=True around the sub-layers."""

# expects: block-dropout-in-eval
# loses: block-dropout-eval
import torch.nn.functional as F

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + F.dropout(h, self.dropout.p)
            x = x + F.dropout(self.ffn(self.norm2(x)), self.dropout.p)
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm1(x + self.dropout(h))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
