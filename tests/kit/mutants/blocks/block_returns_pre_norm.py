"""Mutant: Post-LN that computes norm2 but returns the sum before it."""

# expects: block-returns-pre-norm
# loses: post-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self.dropout(h)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm1(x + self.dropout(h))
            y = x + self.dropout(self.ffn(x))
            self.norm2(y)
            x = y
        return x, weights
