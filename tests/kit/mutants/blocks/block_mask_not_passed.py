"""Mutant: the mask never reaches the attention."""

# expects: block-mask-ignored
# loses: post-ln, pre-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x))
            x = x + self.dropout(h)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            h, weights = self.attn(x)
            x = self.norm1(x + self.dropout(h))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
