"""Graded suite for induction.py: one test per check in autograder/checks/induction/."""

from autograder.plugin import suite

test_induction = suite("induction")
