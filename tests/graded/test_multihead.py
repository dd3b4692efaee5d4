"""Graded suite for multihead.py: one test per check in autograder/checks/multihead.py."""

from autograder.plugin import suite

test_multihead = suite("multihead")
