"""`python -m autograder regrade` (make regrade STUDENT=...): autograde again one student, on
the same seed (channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from ...core.errors import UsageError
from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "regrade", "autograde again one student (--student), same seed", run
    )
    p.add_argument("--assignment", action="append", help="only these assignments")
    p.add_argument("--student", action="append", required=True, help="student id")


def run(args: argparse.Namespace) -> int:
    def regrade(course: ModuleType, root: Path) -> None:
        known = {p.parent.name for p in (root / "submitted").glob("*/*")}
        unknown = [s for s in args.student if s not in known]
        if unknown:
            raise UsageError(
                f"STUDENT={unknown[0]!r} has no submission in {root / 'submitted'}; "
                f"students there: {', '.join(sorted(known)) or 'none'}"
            )
        course.autograde(root, args.assignment, students=args.student, settings=args.settings)

    return nbgrader_course.call(args, regrade)
