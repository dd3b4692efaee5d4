"""Mutant: value defaults to the query."""

# expects: mha-value-defaults-to-query
# loses: defaults
from types import FunctionType

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention

# The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
_forward = FunctionType(
    _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
)


class MultiHeadAttention(_Reference):
    def forward(self, query, key=None, value=None, mask=None):
        return _forward(self, query, key, query if value is None else value, mask)
