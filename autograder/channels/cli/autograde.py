"""`python -m autograder autograde` (make autograde): nbgrader autograde, then the hidden tier
judged outside the kernel, in the sandbox (channels/nbgrader/autograde.py)."""

from __future__ import annotations

import argparse

from . import nbgrader_course


def register(verbs) -> None:
    p = nbgrader_course.add_verb(
        verbs,
        "autograde",
        "nbgrader autograde, then the hidden tier judged outside the kernel",
        run,
    )
    p.add_argument("--assignment", action="append", help="only these assignments")
    p.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="run the notebook kernels even where they cannot be confined (it says so)",
    )


def run(args: argparse.Namespace) -> int:
    # the run's settings (cli.main: the flags over ATTENTION_LAB_* over --root's course.toml)
    return nbgrader_course.call(
        args, lambda course, root: course.autograde(root, args.assignment, settings=args.settings)
    )
