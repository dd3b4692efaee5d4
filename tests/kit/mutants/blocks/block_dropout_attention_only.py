"""Mutant: the block drops the attention sub-layer's output but not the feed-forward's."""

# expects: block-dropout-ignored
# loses: block-dropout-train
from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self.dropout(h)
            return x + self.ffn(self.norm2(x)), weights
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(x + self.dropout(h))
        return self.norm2(x + self.ffn(x)), weights
