"""Mutant: positions run from 1 to max_len."""

# expects: pe-positions-from-one
# loses: encoding
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(1, max_len + 1, dtype=torch.float32)[:, None]
    omega = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    angles = positions * omega
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe
