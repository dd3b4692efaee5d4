"""Mutant: Pre-LN whose feed-forward reads the block's input x, not the stream after the
attention's residual sum (GPT-J's parallel block)."""

# expects: block-ffn-reads-block-input
# loses: pre-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self.dropout(h) + self.dropout(self.ffn(self.norm2(x)))
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm1(x + self.dropout(h))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
