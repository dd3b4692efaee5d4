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
    # TODO (sinusoidal_encoding): about 7 lines.
    #   Goal: the (max_len, D) float32 table of the docstring.
    #   1. The positions p as a float32 column, (max_len, 1).  Use: torch.arange, None indexing.
    #   2. One frequency ω_i = 10000^(-2i/D) per pair of columns, i = 0 .. ceil(D/2) - 1: the
    #      exponent uses the EVEN column index 2i, and column 2i + 1 reuses ω_i.
    #      Use: torch.arange with a step, and torch.exp with math.log (or a power).
    #   3. The angles p·ω_i by broadcasting: (max_len, 1), (ceil(D/2),) -> (max_len, ceil(D/2)).
    #   4. Start from zeros; fill the even columns with the sines and the odd columns with the
    #      cosines (slices with a step of 2). Odd D has one odd column fewer than angles.
    ### BEGIN SOLUTION
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(D/2),)
    omega = torch.exp(two_i * (-math.log(10000.0) / d_model))  # ω_i = 10000^(-2i/D)
    angles = positions * omega  # (max_len, 1) x (ceil(D/2),) -> (max_len, ceil(D/2))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)  # columns 0, 2, 4, ...
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # columns 1, 3, ...; D // 2 of them
    return pe
    ### END SOLUTION


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to a batch of embeddings, then applies dropout.

    forward(x) = dropout(x + PE[:T]) for x of shape (B, T, D).

    `pe` is a buffer of shape (1, max_len, D): it moves with .to(device) and is saved in the
    state_dict, but it is not a parameter (no optimizer ever changes it).
    """

    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # TODO (PositionalEncoding.__init__): 1 line.
        #   Store the table, shaped (1, max_len, D), as a buffer named "pe": a buffer moves with
        #   .to(device) and is saved in the state_dict, but it is not a parameter (the encoding is
        #   fixed, never trained).  Use: self.register_buffer, sinusoidal_encoding.
        ### BEGIN SOLUTION
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model)[None])
        ### END SOLUTION

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D). Raises ValueError when T > max_len.

        Differentiable: gradients flow from the output back to x (nothing in between under
        torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (PositionalEncoding.forward): about 5 lines.
        #   Goal: dropout(x + PE[:T]) for x of shape (B, T, D).
        #   1. T longer than the table: raise ValueError with a message that gives T and max_len.
        #   2. The table's first T positions, (1, T, D), broadcast over the batch.
        #   3. Add them to x, then apply self.dropout (a no-op in eval mode).
        ### BEGIN SOLUTION
        B, T, D = x.shape
        max_len = self.pe.size(1)
        if T > max_len:
            raise ValueError(
                f"sequence length T = {T} is longer than max_len = {max_len}: build "
                f"PositionalEncoding with max_len >= {T}"
            )
        return self.dropout(x + self.pe[:, :T])  # (B, T, D) + (1, T, D)
        ### END SOLUTION
