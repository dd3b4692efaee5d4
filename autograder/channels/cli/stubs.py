"""`python -m autograder stubs` (make stubs): regenerate assignments/ from solutions/."""

from __future__ import annotations

import argparse

from ...authoring import stubgen
from ...core.errors import UsageError
from ...core.paths import ASSIGNMENTS, ROOT, SOLUTIONS


def register(verbs) -> None:
    stubs = verbs.add_parser("stubs", help="regenerate assignments/")
    stubs.add_argument("--module", action="append", help="only these modules (repeatable)")
    stubs.set_defaults(run=run)


def need_solutions() -> None:
    """The instructor's verbs refuse in the student copy (no solutions/), saying so."""
    if not (SOLUTIONS / "__init__.py").is_file():
        raise UsageError(
            "solutions/ is not here: this is the student copy. Stubs and "
            "fixtures are generated on the instructor's side."
        )


def run(args: argparse.Namespace) -> int:
    need_solutions()
    for path in stubgen.write(SOLUTIONS, ASSIGNMENTS, args.module):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0
