"""Alternative: positions times frequencies with einsum, sin and cos written into a
preallocated table by a loop over the two parities, and F.dropout with training=self.training."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)
    omega = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2).float() / d_model)
    angles = torch.einsum("p,f->pf", positions, omega)  # (max_len, ceil(D/2))
    table = torch.empty(max_len, d_model)
    for parity, fn in ((0, torch.sin), (1, torch.cos)):
        cols = table[:, parity::2].shape[1]
        table[:, parity::2] = fn(angles[:, :cols])
    return table


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model)[None, :, :])

    def forward(self, x):
        batch, length, width = x.shape
        if length > self.pe.size(1):
            raise ValueError(f"got {length} positions, max_len is {self.pe.size(1)}")
        return F.dropout(x + self.pe[:, :length], p=self.dropout.p, training=self.training)
