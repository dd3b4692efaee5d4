"""`python -m autograder regrade` (make regrade STUDENT=... or ALL=1): autograde again one
student, on the same seed; --all applies the current course.toml to everyone, from the stored
results where the notebook and the seed are unchanged (channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from ...core.errors import UsageError
from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs,
        "regrade",
        "autograde again one student (--student), same seed; --all: the current course.toml "
        "applied to everyone (only changed notebooks run again)",
        run,
    )
    p.add_argument("--assignment", action="append", help="only these assignments")
    p.add_argument("--student", action="append", help="student id")
    p.add_argument(
        "--all",
        action="store_true",
        help="everyone, under the current course.toml, from the stored results where the "
        "notebook and the seed are unchanged",
    )


def run(args: argparse.Namespace) -> int:
    if args.all and args.student:
        raise UsageError("regrade: give --student or --all, not both")
    if not args.all and not args.student:
        raise UsageError("regrade: give --student ID (one student) or --all (everyone)")

    def regrade(course: ModuleType, root: Path) -> None:
        if args.all:
            course.regrade_all(root, args.assignment, settings=args.settings)
            return
        known = {p.parent.name for p in (root / "submitted").glob("*/*")}
        unknown = [s for s in args.student if s not in known]
        if unknown:
            raise UsageError(
                f"STUDENT={unknown[0]!r} has no submission in {root / 'submitted'}; "
                f"students there: {', '.join(sorted(known)) or 'none'}"
            )
        course.autograde(root, args.assignment, students=args.student, settings=args.settings)

    return nbgrader_course.call(args, regrade)
