"""Mutant: all sines in the first half of the columns, all cosines in the second."""

# expects: pe-halves-layout
# loses: relative
import math

import torch

from solutions.positional import PositionalEncoding  # noqa: F401


def sinusoidal_encoding(max_len, d_model):
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    omega = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    angles = positions * omega
    return torch.cat([torch.sin(angles), torch.cos(angles[:, : d_model // 2])], dim=1)
