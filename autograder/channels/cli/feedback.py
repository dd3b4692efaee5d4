"""`python -m autograder feedback` (make feedback): nbgrader generate_feedback (HTML, in
feedback/; channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "feedback", "nbgrader generate_feedback (HTML, in feedback/)", run
    )
    p.add_argument("--assignment", action="append", help="only these assignments")


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.call(args, lambda course, root: course.feedback(root, args.assignment))
