"""Mutant: phi(x) = exp(x), positive but not elu(x) + 1 (equal below 0, larger above)."""

# expects: linear-feature-map
# loses: linear, linear-causal, linear-cost, linear-feature-map
from types import FunctionType, SimpleNamespace

import torch

import solutions.efficient as _solution
from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401

# The solution's linear_attention with F.elu(x) + 1 giving exp(x).
_F = SimpleNamespace(elu=lambda x: torch.exp(x) - 1)
linear_attention = FunctionType(
    _solution.linear_attention.__code__,
    {**vars(_solution), "F": _F},
    argdefs=_solution.linear_attention.__defaults__,
)
