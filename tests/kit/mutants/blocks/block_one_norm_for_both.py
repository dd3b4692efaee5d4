"""Mutant: norm1 serves both sub-layers (norm2 is never used)."""

# expects: block-one-norm-for-both
# loses: pre-ln, post-ln
from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self.dropout(h)
            return x + self.dropout(self.ffn(self.norm1(x))), weights
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(x + self.dropout(h))
        return self.norm1(x + self.dropout(self.ffn(x))), weights
