"""`python -m autograder collect` (make collect): downloaded/<assignment>/archive/ ->
submitted/, with a report (channels/nbgrader/collect.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "collect", "downloaded/<assignment>/archive/ -> submitted/, with a report", run
    )
    p.add_argument("--assignment", action="append", help="only these assignments")


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.call(args, lambda course, root: course.collect(root, args.assignment))
