"""Graded suite for gpt.py: one test per check in autograder/checks/gpt.py."""

from autograder.plugin import suite

test_gpt = suite("gpt")
