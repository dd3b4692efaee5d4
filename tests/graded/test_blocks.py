"""Graded suite for blocks.py: one test per check in autograder/checks/blocks/."""

from autograder.plugin import suite

test_blocks = suite("blocks")
