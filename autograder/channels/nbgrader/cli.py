"""The nbgrader course's verbs on the command line (`python -m autograder course ...`).

Registered without importing nbgrader or nbformat: they are instructor extras
(requirements-instructor.lock), and a student's `python -m autograder grade` must start
without them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ...core import course_config
from ...core.errors import UsageError
from ...core.settings import Settings, SettingsError

# --------------------------------------------------------------------------- the CLI verbs


def add_verbs(verbs) -> None:
    """Register `course`, `release`, `collect`, `autograde`, `regrade`, `feedback`, `export`."""
    helps = {
        "course": "generate the nbgrader course's source notebooks from solutions/",
        "release": "nbgrader generate_assignment, for each assignment",
        "collect": "downloaded/<assignment>/archive/ -> submitted/, with a report",
        "autograde": "nbgrader autograde, then the hidden tier judged outside the kernel",
        "regrade": "autograde again one student (--student), same seed; --all: the current "
        "course.toml applied to everyone (only changed notebooks run again)",
        "feedback": "nbgrader generate_feedback (HTML, in feedback/)",
        "export": "grades.csv from the gradebook (missing told from 0)",
    }
    for verb, text in helps.items():
        p = verbs.add_parser(verb, help=text)
        p.add_argument("--root", default="course", help="the course directory")
        if verb == "course":
            p.add_argument("--module", action="append", help="only these modules")
        elif verb == "export":
            p.add_argument("--to", default=None, help="CSV path (default <root>/grades.csv)")
        else:
            p.add_argument("--assignment", action="append", help="only these assignments")
        if verb == "regrade":
            p.add_argument("--student", action="append", help="student id")
            p.add_argument(
                "--all",
                action="store_true",
                help="everyone, under the current course.toml, from the stored results "
                "where the notebook and the seed are unchanged",
            )
        p.set_defaults(run=_run_verb, course_verb=verb)


def _run_verb(args) -> int:
    try:
        return _verb(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _verb(args) -> int:
    try:
        from . import course
        from .course import SOLUTIONS, autograde, export, regrade_all, write_course
    except ImportError as e:  # the student set has no nbgrader / nbformat
        raise UsageError(
            f"{e.name or e}: the instructor extras are not installed in this environment; "
            "`make venv-instructor` installs them (every instructor make verb does it first)"
        ) from None
    root = Path(args.root)
    try:  # the flags over ATTENTION_LAB_* over the course's course.toml [limits]
        settings = Settings.resolve(
            cli_args=args, environ=os.environ, course_toml=root / course_config.FILE
        )
    except SettingsError as e:
        raise UsageError(str(e)) from None
    try:
        if args.course_verb == "course":
            if not (SOLUTIONS / "__init__.py").is_file():
                raise UsageError(
                    "solutions/ is not here: the course is built on the instructor's side"
                )
            for path in write_course(root, args.module):
                print(f"wrote {path}")
            print(
                f"course directory: {root} (settings: {root / course_config.FILE}, "
                f"nbgrader: {root / 'nbgrader_config.py'})"
            )
        elif args.course_verb == "export":
            print(f"wrote {export(root, args.to)}")
        elif args.course_verb == "regrade" and args.all:
            if args.student:
                raise UsageError("regrade: give --student or --all, not both")
            regrade_all(root, args.assignment, settings=settings)
        elif args.course_verb == "regrade":
            if not args.student:
                raise UsageError("regrade: give --student ID (one student) or --all (everyone)")
            known = {p.parent.name for p in (root / "submitted").glob("*/*")}
            unknown = [s for s in args.student if s not in known]
            if unknown:
                raise UsageError(
                    f"STUDENT={unknown[0]!r} has no submission in {root / 'submitted'}; "
                    f"students there: {', '.join(sorted(known)) or 'none'}"
                )
            autograde(root, args.assignment, students=args.student, settings=settings)
        elif args.course_verb == "autograde":
            autograde(root, args.assignment, settings=settings)
        else:
            getattr(course, args.course_verb)(root, args.assignment)
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        raise UsageError(str(e)) from None
    return 0
