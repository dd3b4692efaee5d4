"""`python -m autograder release` (make release): nbgrader generate_assignment, for each
assignment (channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.per_assignment(args, "release")


register = nbgrader_course.per_assignment_parser(
    "release", "nbgrader generate_assignment, for each assignment", run
)
