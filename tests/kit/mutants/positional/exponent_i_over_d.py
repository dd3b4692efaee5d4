"""Mutant: the exponent uses the pair index i instead of 2i."""

# expects: pe-exponent-i-over-d
# loses: frequencies
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    i = torch.arange((d_model + 1) // 2, dtype=torch.float32)
    angles = positions / 10000.0 ** (i / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe
