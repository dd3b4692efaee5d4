"""Mutant: the four projections always have a bias (nn.Linear's default), whatever `bias` says:
the grader's weights for bias=False cannot be loaded (every check that loads them)."""

# expects: weights-not-loaded
from torch import nn

from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads  # noqa: F401


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout=dropout, bias=bias)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Linear(d_model, d_model))
