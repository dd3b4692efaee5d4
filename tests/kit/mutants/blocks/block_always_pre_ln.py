"""Mutant: Pre-LN whatever norm_first says."""

# expects: block-pre-ln-for-post-ln
# loses: post-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        h, weights = self.attn(self.norm1(x), mask=mask)
        x = x + self.dropout(h)
        x = x + self.dropout(self.ffn(self.norm2(x)))
        return x, weights
