"""`python -m autograder release` (make release): nbgrader generate_assignment, for each
assignment (channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "release", "nbgrader generate_assignment, for each assignment", run
    )
    p.add_argument("--assignment", action="append", help="only these assignments")


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.call(args, lambda course, root: course.release(root, args.assignment))
