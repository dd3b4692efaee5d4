"""Graded suite for attention.py: one test per check in autograder/checks/attention.py."""

from autograder.plugin import suite

test_attention = suite("attention")
