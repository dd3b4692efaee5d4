"""Mutant: the entropy in bits (log2) in softmax_saturation, which this file's
sqrt_dk_experiment calls (the solution's code, on this module's softmax_saturation). The
experiment is judged on the student's own softmax_saturation: the mistake costs its checks."""

# expects: sqrtdk-entropy-bits
# loses: sqrtdk-saturation, sqrtdk-saturated
from types import FunctionType

import torch

from solutions import diagnostics as _solution
from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / q.size(-1) ** 0.5
    w = scores.softmax(dim=-1)
    entropy = -torch.where(w > 0, w * torch.log2(w), 0.0).sum(dim=-1)
    return entropy.mean(), w.amax(dim=-1).mean()


sqrt_dk_experiment = FunctionType(
    _solution.sqrt_dk_experiment.__code__,
    globals(),
    argdefs=_solution.sqrt_dk_experiment.__defaults__,
)
