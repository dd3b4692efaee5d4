"""`python -m autograder export` (make export): course/grades.csv from nbgrader's gradebook,
"missing" told from 0 (channels/nbgrader/export.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "export", "grades.csv from the gradebook (missing told from 0)", run
    )
    p.add_argument("--to", default=None, help="CSV path (default <root>/grades.csv)")


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.call(
        args, lambda course, root: print(f"wrote {course.export(root, args.to)}")
    )
