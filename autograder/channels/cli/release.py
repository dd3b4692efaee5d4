"""`python -m autograder release` (make release): nbgrader generate_assignment, for each
assignment (channels/nbgrader/course.py)."""

from __future__ import annotations

from . import nbgrader_course

register, run = nbgrader_course.per_assignment(
    "release", "nbgrader generate_assignment, for each assignment"
)
