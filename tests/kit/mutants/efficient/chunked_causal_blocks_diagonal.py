"""Mutant: the causal mask in each chunk blocks j >= i, the diagonal too (query 0 sees no key)."""

# expects: chunked-causal-blocks-diagonal
# loses: chunked, chunked-memory
from types import FunctionType

import torch

import solutions.efficient as _solution
from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


class _Rows:
    """torch, except that the (T, 1) row positions come out one higher: cols > rows - 1."""

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def arange(*args, **kwargs):
        positions = torch.arange(*args, **kwargs)
        return positions - 1 if len(args) == 1 else positions  # arange(T): the query rows


# The solution's chunked_attention, with `torch` replaced by _Rows in its globals.
chunked_attention = FunctionType(
    _solution.chunked_attention.__code__,
    {**vars(_solution), "torch": _Rows()},
    argdefs=_solution.chunked_attention.__defaults__,
)
