"""Mutant: GPT-2's tanh approximation of GELU where the exact one is asked."""

# expects: ffn-gelu-tanh
import torch.nn.functional as F
from torch import nn

from solutions.blocks import TransformerBlock, layer_norm  # noqa: F401


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = self.linear1(x)
        h = F.gelu(h, approximate="tanh") if self.activation == "gelu" else F.relu(h)
        return self.linear2(self.dropout(h))
