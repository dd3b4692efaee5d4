"""Graded suite for efficient.py: one test per check in autograder/checks/efficient/."""

from autograder.plugin import suite

test_efficient = suite("efficient")
