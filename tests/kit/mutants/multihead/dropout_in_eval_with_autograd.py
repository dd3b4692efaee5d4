"""Mutant: dropout also on whenever autograd is on, so model.eval() alone does not stop it."""

# expects: mha-dropout-in-eval
# loses: dropout
from types import FunctionType

import torch
import torch.nn.functional as F
from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention


class _Dropout(nn.Dropout):
    def forward(self, x):
        return F.dropout(x, self.p, training=self.training or torch.is_grad_enabled())


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout, bias)
        self.dropout = _Dropout(dropout)

    # The solution's forward, run with this file's globals (split_heads, merge_heads, attention).
    forward = FunctionType(
        _Reference.forward.__code__, globals(), argdefs=_Reference.forward.__defaults__
    )
