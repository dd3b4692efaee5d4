"""Mutant: W_O set to the identity but left trainable."""

# expects: wo-not-frozen
# ruff: noqa: F405
from types import FunctionType

import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import wo_experiment as _wo_experiment


def fix_wo_to_identity(attn):
    with torch.no_grad():
        attn.w_o.weight.copy_(torch.eye(attn.w_o.weight.size(0)))


# The solution's wo_experiment, run with this file's globals: it calls the fix_wo_to_identity above.
wo_experiment = FunctionType(
    _wo_experiment.__code__, globals(), argdefs=_wo_experiment.__defaults__
)
