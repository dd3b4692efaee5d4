"""Mutant: forward decorated with @torch.no_grad() (the table needs no gradient, so why
track?): the right values, but no gradient flows back to x, so the token embedding under it
never learns."""

# expects: no-gradient
# loses: forward
import torch

from solutions.positional import PositionalEncoding as _Reference
from solutions.positional import sinusoidal_encoding  # noqa: F401


class PositionalEncoding(_Reference):
    @torch.no_grad()
    def forward(self, x):
        return super().forward(x)
