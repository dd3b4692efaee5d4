"""Mutant: forward multiplies x by √d_model before adding the table, the embedding's scale of
the original Transformer, done in the wrong module."""

# expects: pe-scales-x
# loses: forward
import math

from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    def forward(self, x):
        B, T, D = x.shape
        if T > self.pe.size(1):
            raise ValueError(f"T = {T} is longer than max_len = {self.pe.size(1)}")
        return self.dropout(x * math.sqrt(D) + self.pe[:, :T])
