"""Mutant: dropout on the output instead of the weights."""

# expects: mha-dropout-not-on-weights
# loses: dropout
from types import FunctionType

from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention

# The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
_forward = FunctionType(
    _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
)


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout, bias)
        self.output_dropout, self.dropout = self.dropout, nn.Identity()

    def forward(self, query, key=None, value=None, mask=None):
        out, weights = _forward(self, query, key, value, mask)  # weights not dropped
        return self.output_dropout(out), weights
