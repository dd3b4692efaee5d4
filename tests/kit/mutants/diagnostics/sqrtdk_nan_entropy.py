"""Mutant: w * log(w), which is NaN where a saturated softmax underflows to 0."""

# expects: sqrtdk-zero-log-zero
from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / q.size(-1) ** 0.5
    w = scores.softmax(dim=-1)
    return -(w * w.log()).sum(dim=-1).mean(), w.amax(dim=-1).mean()
