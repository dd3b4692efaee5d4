"""Alternative: the reference's attention in a module that also keeps its scale 1/√d_k as a
persistent buffer (in the state_dict, not a weight: the grader draws none and must keep it)."""

import torch

from solutions.multihead import *  # noqa: F403
from solutions.multihead import MultiHeadAttention as _Reference


class MultiHeadAttention(_Reference):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__(d_model, num_heads, dropout=dropout, bias=bias)
        self.register_buffer("scale", torch.tensor((d_model // num_heads) ** -0.5))
