"""Alternative: torch.outer for the angles, one frequency per pair repeated with
repeat_interleave, a where() to pick sin or cos, and dropout written by hand (a Bernoulli keep
mask scaled by 1 / (1 - p), in training mode only)."""

import torch
from torch import nn


def sinusoidal_encoding(max_len, d_model):
    pair = torch.arange(d_model) // 2  # column j belongs to pair j // 2
    omega = 10000.0 ** (-(2 * pair).double() / d_model)
    angles = torch.outer(torch.arange(max_len, dtype=torch.float64), omega)
    even = (torch.arange(d_model) % 2 == 0).expand(max_len, d_model)
    return torch.where(even, angles.sin(), angles.cos()).to(torch.float32)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model).unsqueeze(0))

    def forward(self, x):
        n = x.shape[1]
        if n > self.pe.shape[1]:
            raise ValueError(f"T = {n} exceeds max_len = {self.pe.shape[1]}")
        y = x + self.pe[:, :n, :]
        p = self.dropout.p
        if self.training and p > 0:
            keep = torch.rand_like(y) >= p
            y = y * keep / (1 - p)
        return y
