"""Graded suite for llama.py: one test per check in autograder/checks/llama/."""

from autograder.plugin import suite

test_llama = suite("llama")
