"""Mutant: the "scaled" scores are divided by a fixed 8 (√64), whatever d_k is."""

# expects: sqrtdk-finding-scaled
from types import FunctionType

import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import sqrt_dk_experiment as _sqrt_dk_experiment


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / 8.0
    w = scores.softmax(dim=-1)
    return -torch.special.xlogy(w, w).sum(dim=-1).mean(), w.amax(dim=-1).mean()


# The solution's sqrt_dk_experiment, with this file's globals: it calls the function above.
sqrt_dk_experiment = FunctionType(
    _sqrt_dk_experiment.__code__, globals(), argdefs=_sqrt_dk_experiment.__defaults__
)
