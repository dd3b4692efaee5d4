"""`python -m autograder class-report` (make class-report): the class as a whole, from batch
results or the nbgrader course (channels/class_report.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import class_report


def register(verbs) -> None:
    p = verbs.add_parser("class-report", help="the class as a whole: HTML, plots, LMS CSVs")
    p.add_argument("--from", dest="source", default="build/batch", help="batch out or course")
    p.add_argument("--out", default="build/class-report")
    p.add_argument(
        "--submissions",
        default="",
        help="the folder batch graded (default: the one batch.json records)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="similarity at or above which a pair is flagged for review (default 0.85)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        submissions = Path(args.submissions) if args.submissions else None
        data = class_report.load(Path(args.source), submissions)
    except (FileNotFoundError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    index = class_report.write(data, Path(args.out), threshold=args.threshold)
    print(f"wrote {index} ({len(data.students)} students, {len(data.rows)} check results)")
    for ex, mis, n, share in class_report.misconceptions(data)[:5]:
        print(f"  {ex}: [{mis}] {n} students ({100 * share:.0f}%)")
    return 0
