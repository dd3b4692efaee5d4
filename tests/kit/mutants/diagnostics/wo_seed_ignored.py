"""Mutant (issue 12.6): wo_experiment always trains from seed 0, whatever seed it is given."""

# expects: wo-runs-differ
# loses: wo-experiment
from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import wo_experiment as _wo_experiment


def wo_experiment(steps=300, seed=0):
    return _wo_experiment(steps, seed=0)
