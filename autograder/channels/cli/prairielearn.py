"""`python -m autograder prairielearn` (make prairielearn) writes a PrairieLearn course
folder; `prairielearn-run` grades one submission inside its external grader
(channels/prairielearn.py). One platform's build verb and run verb: one file, one form
(options.add_platform_verbs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import prairielearn
from .options import add_platform_verbs, modules_of, run_on_platform


def register(verbs) -> None:
    add_platform_verbs(
        verbs,
        "prairielearn",
        build=build,
        run=run,
        out="build/prairielearn",
        root_field="prairielearn_root",
        build_help="write a PrairieLearn course folder",
        run_help="grade /grade/student (PrairieLearn)",
        build_options=_build_options,
    )


def _build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image", default=None, help="the grading image, registry/namespace/name:tag"
    )
    parser.add_argument("--start", default=None, help="YYYY-MM-DD: published and released")
    parser.add_argument("--due", default=None, help="YYYY-MM-DD: the homework's due date")
    parser.add_argument("--timezone", default="UTC", help="the course's timezone (IANA name)")


def build(args: argparse.Namespace) -> int:
    wanted = modules_of(args.ex)
    pl = prairielearn
    try:
        start = pl.parse_date(args.start, "PL_START") if args.start else None
        due = pl.parse_date(args.due, "PL_DUE", end_of_day=True) if args.due else None
        out = pl.build(
            Path(args.out), wanted, image=args.image, start=start, due=due, timezone=args.timezone
        )
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    image = args.image or pl.default_image()
    print(f"wrote {out}: questions/ (one per module), serverFilesCourse/{pl.KIT}/ (the grader)")
    print(f"the grading image {image}: build it and push it (docs/running-a-course.md):")
    for command in pl.image_commands(image, out):
        print(f"  {command}")
    return 0


def run(args: argparse.Namespace) -> int:
    """`prairielearn-run`: grade inside the platform, under the run's settings."""
    return run_on_platform(args, "PrairieLearn", "prairielearn_root", prairielearn.run)
