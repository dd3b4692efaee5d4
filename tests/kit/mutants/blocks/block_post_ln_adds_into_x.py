"""Mutant: the Post-LN block adds the attention's output into its input in place (x += ...,
then the norm): the right output, but the caller's x holds the sum after the call. Post-LN
has no gradient run, so the post-ln check watches x (probing.kept) and charges it there, once."""

# expects: changed-input
# loses: post-ln
from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask=mask)
        h, weights = self.attn(x, mask=mask)
        x += self.dropout(h)
        x = self.norm1(x)
        return self.norm2(x + self.dropout(self.ffn(x))), weights
