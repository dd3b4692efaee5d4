"""Graded suite for modern_blocks.py: one test per check in autograder/checks/modern_blocks/."""

from autograder.plugin import suite

test_modern_blocks = suite("modern_blocks")
