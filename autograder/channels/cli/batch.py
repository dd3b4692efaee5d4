"""`python -m autograder batch` (make batch): grade a folder of submissions in the sandbox
(channels/batch.py)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from ...core.settings import Settings
from ...run.sandbox.jail import Limits
from .. import batch
from .options import modules_of


def register(verbs) -> None:
    d = Limits()
    p = verbs.add_parser("batch", help="grade a folder of submissions in the sandbox")
    p.add_argument("--submissions", required=True, help="folder of package folders / .zips")
    p.add_argument("--out", default="build/batch")
    p.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    p.add_argument(
        "--jobs", type=int, default=None, help="submissions graded at once (default: cores + 1)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="one hidden-tier seed for everyone (default: each student's own)",
    )
    p.add_argument("--public", action="store_true", help="grade the public tier instead")
    # None: not given (the environment, course.toml's [limits], then jail.Limits decide)
    p.add_argument(
        "--timeout", type=float, default=None, help=f"seconds per submission ({d.timeout:g})"
    )
    p.add_argument(
        "--check-timeout",
        type=float,
        default=None,
        help="CPU seconds no check may exceed, in every channel (default: no cap; each "
        "check's calibrated limit)",
    )
    p.add_argument(
        "--memory",
        dest="memory_mb",
        type=float,
        default=None,
        help=f"MiB per submission ({d.memory >> 20})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    p.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="grade even where student code cannot be isolated (every result says so)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    wanted = modules_of(args.ex)
    if args.jobs is not None and args.jobs <= 0:
        print(f"error: --jobs must be positive, got {args.jobs}", file=sys.stderr)
        return 2
    # the flags over ATTENTION_LAB_* over course/course.toml's [limits], resolved once by
    # cli.main for every verb alike (settings.py)
    settings: Settings = args.settings
    limits = Limits.of(settings)
    # SIGTERM (a CI timeout, kill): unwind, so that the sandbox kills its processes and
    # removes its cgroups and temporary folders.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        graded = batch.run(
            Path(args.submissions),
            Path(args.out),
            modules=wanted or None,
            jobs=args.jobs,
            seed=args.seed,
            public=args.public,
            limits=limits,
            progress=not args.quiet,
            students=args.student,
            insecure=settings.insecure,
            sandbox_mode=settings.sandbox_mode,
            settings=settings,
        )
    except batch.BatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    meta = json.loads((Path(args.out) / "batch.json").read_text())
    full = sum(g.score == g.max_score and not g.not_graded for g in graded)
    failed = sum(bool(g.not_graded) for g in graded)
    print(
        f"graded {len(graded)} submissions in {meta['seconds']} s ({meta['tier']} tier, "
        f"{meta['isolation_detail']} isolation, {meta['jobs']} jobs); {full} with full marks"
        + (f"; {failed} not graded (see grades.csv)" if failed else "")
    )
    print(f"wrote {Path(args.out) / 'grades.csv'} and, per student, results.json and feedback.txt")
    return 0
