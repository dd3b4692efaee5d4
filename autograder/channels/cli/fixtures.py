"""`python -m autograder fixtures` (make fixtures): regenerate the public reference outputs
from solutions/ (the modules whose solution or probe side changed)."""

from __future__ import annotations

import argparse

from ...core import syllabus
from ...core.paths import ROOT
from .stubs import need_solutions


def register(verbs) -> None:
    fx = verbs.add_parser("fixtures", help="regenerate the reference outputs")
    fx.add_argument("--module", action="append")
    fx.add_argument("--force", action="store_true", help="rewrite even fresh modules")
    fx.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ...core import fixtures  # torch (seconds): only for this verb

    need_solutions()
    for module in args.module or list(syllabus.MODULES):
        if fixtures.is_fresh(module) and not args.force:
            print(f"{module}: fresh (solution and probe side unchanged), left as it is")
            continue
        print(f"wrote {fixtures.write(module).relative_to(ROOT)}")
    return 0
