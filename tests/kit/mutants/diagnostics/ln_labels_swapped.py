"""Mutant: compare_ln_placement builds the stacks right but swaps the two results' labels
(the seeds' "Pre-LN starves the gradients" reading of the same numbers)."""

# expects: ln-placement-pattern
# loses: ln-placement
from types import FunctionType

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import compare_ln_placement as _solution

# The solution's compare_ln_placement, with this file's globals (as if written here).
_right = FunctionType(_solution.__code__, globals(), argdefs=_solution.__defaults__)


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    result = _right(num_layers, d_model, num_heads, d_ff, batch, seq_len, seed)
    return {"pre_ln": result["post_ln"], "post_ln": result["pre_ln"]}
