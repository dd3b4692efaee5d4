"""Mutant: the two norms swapped, in both layouts: norm2 with the attention, norm1 with the
feed-forward."""

# expects: block-norms-swapped
# loses: pre-ln, post-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm2(x), mask=mask)
            x = x + self.dropout(h)
            x = x + self.dropout(self.ffn(self.norm1(x)))
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm2(x + self.dropout(h))
            x = self.norm1(x + self.dropout(self.ffn(x)))
        return x, weights
