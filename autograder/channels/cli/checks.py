"""`python -m autograder checks`: one line per check, its id (the keys course.toml's [points]
takes), its points and its title."""

from __future__ import annotations

import argparse

from .options import modules_of


def register(verbs) -> None:
    p = verbs.add_parser("checks", help="list every check: id, points, title")
    p.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ...core import registry  # every judge: only for this verb

    for module in modules_of(args.ex) or registry.modules():
        for check in registry.checks_of(module):
            print(f"{check.id}\t{check.points:g}\t{check.name}")
    return 0
