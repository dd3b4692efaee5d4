"""Mutant: dropout on the embeddings before the table is added, dropout(x) + PE."""

# expects: pe-dropout-misplaced
# loses: dropout-train
from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    def forward(self, x):
        T = x.size(1)
        if T > self.pe.size(1):
            raise ValueError(f"sequence length {T} is longer than max_len = {self.pe.size(1)}")
        return self.dropout(x) + self.pe[:, :T]
