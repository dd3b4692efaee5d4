"""Mutant: the 2 of 2i applied twice: frequencies 10000^(-2·2i/D)."""

# expects: pe-exponent-4i-over-d
# loses: frequencies
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angles = positions * torch.exp(2 * two_i * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe
