"""Graded suite for flash.py: one test per check in autograder/checks/flash/."""

from autograder.plugin import suite

test_flash = suite("flash")
