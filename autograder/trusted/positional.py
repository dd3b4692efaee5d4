"""Trusted positional encoding. PyTorch has no built-in sinusoid table, so this one is written
another way than solutions/ (every column at once, in float64, then rounded to float32); a kit
test proves it equal to the solution."""

import torch
from torch import nn


def sinusoidal_encoding(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model)
    angles = p * 10000.0 ** (-(j - j % 2).double() / d_model)  # column j uses ω_{j // 2}
    return torch.where(j % 2 == 0, angles.sin(), angles.cos()).float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model)[None])

    def forward(self, x):
        T, max_len = x.size(1), self.pe.size(1)
        if T > max_len:
            raise ValueError(f"sequence length {T} is longer than max_len = {max_len}")
        return self.dropout(x + self.pe[:, :T])
