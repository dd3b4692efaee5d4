"""Graded suite for diagnostics.py: one test per check in autograder/checks/diagnostics/."""

from autograder.plugin import suite

test_diagnostics = suite("diagnostics")
