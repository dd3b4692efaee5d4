"""Mutant: Post-LN whatever norm_first says (the seeds' 'LN must follow the residual')."""

# expects: block-post-ln-for-pre-ln
# loses: pre-ln

from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(x + self.dropout(h))
        x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
