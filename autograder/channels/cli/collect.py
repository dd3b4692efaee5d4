"""`python -m autograder collect` (make collect): downloaded/<assignment>/archive/ ->
submitted/, with a report (channels/nbgrader/collect.py)."""

from __future__ import annotations

from . import nbgrader_course

register, run = nbgrader_course.per_assignment(
    "collect", "downloaded/<assignment>/archive/ -> submitted/, with a report"
)
