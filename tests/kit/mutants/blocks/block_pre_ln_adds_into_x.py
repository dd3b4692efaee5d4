"""Mutant: the Pre-LN block adds the attention's output into its input in place (x += ...):
the right output, but the caller's x holds the sum after the call, and autograd refuses the
in-place change of a tensor that requires a gradient. Charged once, as changed-input, in the
pre-ln check (its gradient run); before every call got its own copy of x, the next calls got
the sum and it lost the dropout checks too, as dropout mistakes it does not make."""

# expects: changed-input
# loses: pre-ln
from solutions.blocks import FeedForward, layer_norm  # noqa: F401
from solutions.blocks import TransformerBlock as _Reference


class TransformerBlock(_Reference):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask=mask)
        h, weights = self.attn(self.norm1(x), mask=mask)
        x += self.dropout(h)
        return x + self.dropout(self.ffn(self.norm2(x))), weights
