"""Mutant: nn.Dropout(inplace=True) on the attention weights: the forward values are right,
but the softmax's output, which autograd keeps for the backward pass, is overwritten, and
training fails (the trusted attention keeps its weights for backward as a softmax does)."""

# expects: no-gradient
# loses: dropout
from types import FunctionType

import torch.nn.functional as F  # noqa: F401
from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads  # noqa: F401

from .attention import scaled_dot_product_attention  # noqa: F401


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout, bias)
        self.dropout = nn.Dropout(dropout, inplace=True)

    # The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
