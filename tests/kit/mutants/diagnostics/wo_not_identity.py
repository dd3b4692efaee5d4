"""Mutant: W_O filled with ones, not the identity."""

# expects: wo-not-identity
# ruff: noqa: F405
from types import FunctionType

import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import wo_experiment as _wo_experiment


def fix_wo_to_identity(attn):
    with torch.no_grad():
        attn.w_o.weight.fill_(1.0)
    attn.w_o.weight.requires_grad_(False)


# The solution's wo_experiment, run with this file's globals: it calls the fix_wo_to_identity above.
wo_experiment = FunctionType(
    _wo_experiment.__code__, globals(), argdefs=_wo_experiment.__defaults__
)
