"""Alternative: one column at a time, in plain Python arithmetic for the frequencies."""

import math

import torch
from torch import nn


def sinusoidal_encoding(max_len, d_model):
    pe = torch.empty(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32)
    for col in range(d_model):
        freq = 1.0 / math.pow(10000.0, (col - col % 2) / d_model)
        pe[:, col] = torch.sin(position * freq) if col % 2 == 0 else torch.cos(position * freq)
    return pe


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model)[None], persistent=True)

    def forward(self, x):
        length, limit = x.size(1), self.pe.size(1)
        if length > limit:
            raise ValueError(f"input has {length} positions; this encoding holds {limit} (max_len)")
        return self.dropout(x + self.pe[0, :length])
