"""Mutant: forward raises for T >= max_len, an off-by-one: a sequence as long as the table
(T = max_len) fits, and only a longer one should raise."""

# expects: pe-refuses-max-len
# loses: too-long

from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    def forward(self, x):
        B, T, D = x.shape
        if T >= self.pe.size(1):
            raise ValueError(f"T = {T} is longer than max_len = {self.pe.size(1)}")
        return self.dropout(x + self.pe[:, :T])
