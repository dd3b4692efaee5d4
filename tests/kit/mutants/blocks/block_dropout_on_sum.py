"""Mutant: the block drops the residual sum, dropout(x + sublayer), so the residual path x is
dropped too."""

# expects: block-dropout-misplaced
# loses: block-dropout-train
from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = self.dropout(x + h)
            return self.dropout(x + self.ffn(self.norm2(x))), weights
        h, weights = self.attn(x, mask=mask)
        x = self.norm1(self.dropout(x + h))
        return self.norm2(self.dropout(x + self.ffn(x))), weights
