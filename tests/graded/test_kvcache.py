"""Graded suite for kvcache.py: one test per check in autograder/checks/kvcache/."""

from autograder.plugin import suite

test_kvcache = suite("kvcache")
