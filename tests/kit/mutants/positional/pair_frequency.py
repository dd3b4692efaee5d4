"""Mutant: each column gets its own exponent j/D: a cosine no longer shares its sine's frequency."""

# expects: pe-pair-frequency
# loses: relative
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    j = torch.arange(d_model, dtype=torch.float32)
    angles = positions / 10000.0 ** (j / d_model)  # (max_len, D)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles[:, 0::2])
    pe[:, 1::2] = torch.cos(angles[:, 1::2])
    return pe
