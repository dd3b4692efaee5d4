"""`python -m autograder collect` (make collect): downloaded/<assignment>/archive/ ->
submitted/, with a report (channels/nbgrader/collect.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.per_assignment(args, "collect")


register = nbgrader_course.per_assignment_parser(
    "collect", "downloaded/<assignment>/archive/ -> submitted/, with a report", run
)
