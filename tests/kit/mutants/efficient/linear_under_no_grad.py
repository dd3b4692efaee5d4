"""Mutant: linear_attention under @torch.no_grad() (an inference trick): the right values,
but no gradient reaches q, k or v."""

# expects: no-gradient
# loses: linear
import torch

from solutions.efficient import *  # noqa: F403
from solutions.efficient import linear_attention as _reference


@torch.no_grad()
def linear_attention(q, k, v, causal=False, eps=1e-6):
    return _reference(q, k, v, causal=causal, eps=eps)
