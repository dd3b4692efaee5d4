"""`python -m autograder watch` (make watch): re-grade a module each time it is saved
(channels/watch.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...core.errors import UsageError
from .options import add_grading_options, modules_of


def register(verbs) -> None:
    watch = verbs.add_parser("watch", help="re-grade a module each time it is saved")
    add_grading_options(watch)
    watch.add_argument(
        "--hard-limit",
        type=float,
        default=120.0,
        help="seconds one grading may take in all, whatever its checks' limits, before it is "
        "stopped",
    )
    watch.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not Path(args.submission).is_dir():
        raise UsageError(f"SUBMISSION={args.submission!r} is not a folder")
    wanted = modules_of(args.ex)
    if args.device != "cpu":
        raise UsageError("make watch grades on the CPU only (DEVICE=cpu)")
    if not args.hard_limit > 0:
        raise UsageError(f"--hard-limit {args.hard_limit!r}: expected a positive number")
    from .. import watch  # torch and matplotlib: only for this verb

    return watch.watch(args.settings, wanted, hard_limit=args.hard_limit)
