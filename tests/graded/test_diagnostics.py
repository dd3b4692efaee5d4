"""Graded suite for diagnostics.py: one test per check in autograder/checks/diagnostics_*.py."""

from autograder.plugin import suite

test_diagnostics = suite("diagnostics")
