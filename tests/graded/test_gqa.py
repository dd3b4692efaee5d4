"""Graded suite for gqa.py: one test per check in autograder/checks/gqa/."""

from autograder.plugin import suite

test_gqa = suite("gqa")
