"""Mutant: forward adds the table to x in place (x += pe): right values, but the caller's x is
changed (an embedding's output, kept for a residual, now holds x + pe)."""

# expects: changed-input
# loses: forward

from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    def forward(self, x):
        B, T, D = x.shape
        if T > self.pe.size(1):
            raise ValueError(f"T = {T} is longer than max_len = {self.pe.size(1)}")
        x += self.pe[:, :T]
        return self.dropout(x)
