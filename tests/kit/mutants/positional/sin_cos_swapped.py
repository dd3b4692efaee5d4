"""Mutant: cosines in the even columns, sines in the odd ones."""

# expects: pe-sin-cos-swapped
# loses: encoding
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    omega = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    angles = positions * omega
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.cos(angles)
    pe[:, 1::2] = torch.sin(angles[:, : d_model // 2])
    return pe
