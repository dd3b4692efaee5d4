"""Graded suite for positional.py: one test per check in autograder/checks/positional/."""

from autograder.plugin import suite

test_positional = suite("positional")
