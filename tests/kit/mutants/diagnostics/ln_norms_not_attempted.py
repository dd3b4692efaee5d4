"""Mutant: layer_gradient_norms is still the TODO stub; compare_ln_placement is done. Only
layer_gradient_norms' own check is lost: the experiment is judged on its set-up."""

# expects: not-attempted
# loses: ln-gradient-norms
from types import FunctionType

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import compare_ln_placement as _compare


def layer_gradient_norms(blocks, x, target, final_norm=None):
    raise NotImplementedError("layer_gradient_norms: not implemented yet")


# The solution's compare_ln_placement, with this file's globals: it calls the stub above.
compare_ln_placement = FunctionType(_compare.__code__, globals(), argdefs=_compare.__defaults__)
