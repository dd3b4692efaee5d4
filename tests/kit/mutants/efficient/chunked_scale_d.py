"""Mutant: the scores are divided by d, not by √d."""

# expects: chunked-wrong-scale
# loses: chunked, chunked-memory
import math
from types import FunctionType, SimpleNamespace

import solutions.efficient as _solution
from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401

# The solution's chunked_attention, with math.sqrt(d) giving d itself.
chunked_attention = FunctionType(
    _solution.chunked_attention.__code__,
    {**vars(_solution), "math": SimpleNamespace(sqrt=lambda d: d, inf=math.inf)},
    argdefs=_solution.chunked_attention.__defaults__,
)
