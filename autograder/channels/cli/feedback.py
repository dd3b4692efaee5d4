"""`python -m autograder feedback` (make feedback): nbgrader generate_feedback (HTML, in
feedback/; channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.per_assignment(args, "feedback")


register = nbgrader_course.per_assignment_parser(
    "feedback", "nbgrader generate_feedback (HTML, in feedback/)", run
)
