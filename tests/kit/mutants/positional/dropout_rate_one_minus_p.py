"""Mutant: passes the keep probability 1 - p to F.dropout, which expects the drop probability."""

# expects: pe-dropout-misplaced
# loses: dropout-train
import torch.nn.functional as F

from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    def forward(self, x):
        T = x.size(1)
        if T > self.pe.size(1):
            raise ValueError(f"sequence length {T} is longer than max_len = {self.pe.size(1)}")
        return F.dropout(x + self.pe[:, :T], 1 - self.dropout.p, self.training)
