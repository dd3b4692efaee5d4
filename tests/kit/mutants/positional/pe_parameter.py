"""Mutant: the table is an nn.Parameter, so an optimizer would train it."""

# expects: pe-is-parameter
# loses: not-trained
import torch.nn.functional as F  # noqa: F401
from torch import nn

from solutions.positional import sinusoidal_encoding


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pe = nn.Parameter(sinusoidal_encoding(max_len, d_model)[None])

    def forward(self, x):
        T = x.size(1)
        if T > self.pe.size(1):
            raise ValueError(f"sequence length {T} is longer than max_len = {self.pe.size(1)}")
        return self.dropout(x + self.pe[:, :T])
