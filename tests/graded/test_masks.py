"""Graded suite for masks.py: one test per check in autograder/checks/masks.py."""

from autograder.plugin import suite

test_masks = suite("masks")
