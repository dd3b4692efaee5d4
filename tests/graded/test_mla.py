"""Graded suite for mla.py: one test per check in autograder/checks/mla/."""

from autograder.plugin import suite

test_mla = suite("mla")
