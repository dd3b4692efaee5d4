"""Mutant: Pre-LN that overwrites x with norm(x), so the residual carries the normalised x."""

# expects: block-residual-from-normed
# loses: pre-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.norm1(x)
            h, weights = self.attn(x, mask=mask)
            x = x + self.dropout(h)
            x = self.norm2(x)
            x = x + self.dropout(self.ffn(x))
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm1(x + self.dropout(h))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
