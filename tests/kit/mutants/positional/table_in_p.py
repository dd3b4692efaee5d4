"""Mutant: the d2l way: the table kept in self.P, a plain attribute (no `pe` buffer). Before,
forward and dropout were judged after loading a random table into `pe`, so its correct
addition failed them too; now they judge what the module adds (its own table)."""

# expects: pe-not-in-state-dict
# loses: buffer
from torch import nn

from solutions.positional import sinusoidal_encoding


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.P = sinusoidal_encoding(max_len, d_model)[None]

    def forward(self, X):
        if X.shape[1] > self.P.shape[1]:
            raise ValueError(f"T = {X.shape[1]} is longer than max_len = {self.P.shape[1]}")
        X = X + self.P[:, : X.shape[1], :].to(X.device)
        return self.dropout(X)
