"""Mutant (issue 12.6): sqrt_dk_experiment draws from a fixed seed 0, whatever seed it is
given: the curves look like the experiment's, but are not the run asked for."""

# expects: sqrtdk-not-this-run
# loses: sqrtdk-experiment
from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import sqrt_dk_experiment as _sqrt_dk_experiment


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    return _sqrt_dk_experiment(d_ks, batch, L, seed=0)
