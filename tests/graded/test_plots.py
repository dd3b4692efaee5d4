"""Graded suite for plots.py: one test per check in autograder/checks/plots/."""

from autograder.plugin import suite

test_plots = suite("plots")
