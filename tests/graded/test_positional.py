"""Graded suite for positional.py: one test per check in autograder/checks/positional.py."""

from autograder.plugin import suite

test_positional = suite("positional")
