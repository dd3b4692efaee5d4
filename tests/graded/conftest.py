"""The graded suites run under the kit's grading plugin (autograder/plugin.py): one pytest
item per check, graded in a forked worker. `pytest tests/graded/test_attention.py` grades
assignments/, `--submission DIR` another folder; `make grade` runs the same suites and prints
its table."""

from autograder.plugin import grader, pytest_addoption, pytest_configure

__all__ = ["grader", "pytest_addoption", "pytest_configure"]
