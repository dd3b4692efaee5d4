"""`python -m autograder course` (make course): the nbgrader course's source notebooks,
generated from solutions/ (channels/nbgrader/course.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from ...core import course_config
from ...core.errors import UsageError
from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs, "course", "generate the nbgrader course's source notebooks from solutions/", run
    )
    p.add_argument("--module", action="append", help="only these modules")


def run(args: argparse.Namespace) -> int:
    def write(course: ModuleType, root: Path) -> None:
        if not (course.SOLUTIONS / "__init__.py").is_file():
            raise UsageError("solutions/ is not here: the course is built on the instructor's side")
        for path in course.write_course(root, args.module):
            print(f"wrote {path}")
        print(
            f"course directory: {root} (settings: {root / course_config.FILE}, "
            f"nbgrader: {root / 'nbgrader_config.py'})"
        )

    return nbgrader_course.call(args, write)
