"""Graded suite for gpt.py: one test per check in autograder/checks/gpt/."""

from autograder.plugin import suite

test_gpt = suite("gpt")
