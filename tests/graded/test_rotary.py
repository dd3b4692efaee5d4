"""Graded suite for rotary.py: one test per check in autograder/checks/rotary/."""

from autograder.plugin import suite

test_rotary = suite("rotary")
