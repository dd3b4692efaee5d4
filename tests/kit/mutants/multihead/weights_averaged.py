"""Mutant: returns the weights averaged over heads."""

# expects: mha-weights-averaged
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
        out, weights = _forward(self, query, key, value, mask)
        return out, weights.mean(dim=1)
