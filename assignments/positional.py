# Generated from solutions/positional.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=positional`).
"""Exercise group 4: sinusoidal positional encoding.

Shape legend: B batch, T sequence length, D = d_model. Positions p start at 0.

Attention by itself is blind to order: permuting the tokens permutes the outputs and nothing
else. Adding a different vector to each position gives the model a way to tell them apart.
The sinusoidal encoding of Vaswani et al. (2017) uses one frequency per (sin, cos) pair of
columns, from 1 down to 1/10000, so that PE(p + k) is a fixed rotation of PE(p) in every pair:
an offset k looks the same wherever it happens.
"""

import math

import torch
from torch import nn


def sinusoidal_encoding(max_len, d_model):
    """The sinusoidal position table.

    PE[p, 2i]     = sin(p / 10000^(2i / D))
    PE[p, 2i + 1] = cos(p / 10000^(2i / D))

    Args:
        max_len: the number of positions, p = 0 .. max_len - 1.
        d_model: D, the number of columns; it may be odd.

    Returns:
        (max_len, D) float32 tensor. Columns 2i and 2i + 1 share one frequency
        ω_i = 10000^(-2i/D); for odd D the last column is a sine with no cosine partner.
    """
    # TODO (sinusoidal_encoding): fill the (max_len, D) table, about 7 lines.
    #   1. positions = torch.arange(max_len, dtype=torch.float32)[:, None], a column (max_len, 1).
    #   2. The even column indices 2i are torch.arange(0, d_model, 2); the frequencies are
    #      ω_i = exp(-(2i / D) · ln 10000) (math.log). Mind the 2: column 2i+1 reuses ω_i.
    #   3. angles = positions * ω, broadcast to (max_len, ceil(D/2)).
    #   4. pe = torch.zeros(max_len, d_model); pe[:, 0::2] = sin(angles) (even columns),
    #      pe[:, 1::2] = cos(angles) (odd columns). For odd D there is one fewer odd column:
    #      slice the angles to D // 2 columns before the cosine.
    raise NotImplementedError("sinusoidal_encoding: not attempted yet")


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to a batch of embeddings, then applies dropout.

    forward(x) = dropout(x + PE[:T]) for x of shape (B, T, D).

    `pe` is a buffer of shape (1, max_len, D): it moves with .to(device) and is saved in the
    state_dict, but it is not a parameter (no optimizer ever changes it).
    """

    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # TODO (PositionalEncoding.__init__): store the table as a buffer named "pe", 1 line.
        #   self.register_buffer("pe", ...) with sinusoidal_encoding(max_len, d_model)[None],
        #   shape (1, max_len, D). Not nn.Parameter: the encoding is fixed, never trained.
        raise NotImplementedError("__init__: not attempted yet")

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D). Raises ValueError when T > max_len."""
        # TODO (PositionalEncoding.forward): about 5 lines.
        #   1. B, T, D = x.shape. If T > self.pe.size(1), raise ValueError with a message that
        #      gives both T and max_len (the student reading it must see what was too long).
        #   2. The positions are axis 1 of pe: self.pe[:, :T] has shape (1, T, D) and
        #      broadcasts over the batch.
        #   3. Return self.dropout(x + ...): nn.Dropout is a no-op in eval mode.
        raise NotImplementedError("forward: not attempted yet")
