"""`python -m autograder feedback` (make feedback): nbgrader generate_feedback (HTML, in
feedback/; channels/nbgrader/course.py)."""

from __future__ import annotations

from . import nbgrader_course

register, run = nbgrader_course.per_assignment(
    "feedback", "nbgrader generate_feedback (HTML, in feedback/)"
)
