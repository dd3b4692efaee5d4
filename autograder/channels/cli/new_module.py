"""`python -m autograder new-module --name x` (make new-module NAME=x): scaffold every file of
a new exercise module (authoring/scaffold.py)."""

from __future__ import annotations

import argparse

from ...authoring import scaffold
from ...core.errors import UsageError
from ...core.paths import ROOT
from .stubs import need_solutions


def register(verbs) -> None:
    new = verbs.add_parser("new-module", help="scaffold every file of a new exercise module")
    new.add_argument("--name", required=True)
    new.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    need_solutions()
    try:
        written = scaffold.create(args.name)
    except scaffold.ScaffoldError as e:
        raise UsageError(str(e)) from None
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    print(
        f"added {args.name!r} to autograder/core/syllabus.py and README.md's module table.\n"
        f"Next: make stubs fixtures, then make grade SUBMISSION=solutions EX={args.name}; "
        "docs/extending.md says what to write in each file."
    )
    return 0
