"""Mutant: no ValueError when T > max_len."""

# expects: pe-too-long-no-valueerror
# loses: too-long
import torch.nn.functional as F  # noqa: F401
from torch import nn

from solutions.positional import sinusoidal_encoding


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model)[None])

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])
