"""`python -m autograder prairielearn` (make prairielearn) writes a PrairieLearn course
folder; `prairielearn-run` grades one submission inside its external grader
(channels/prairielearn.py). One platform's build verb and run verb: one file, one form
(options.add_platform_verbs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import prairielearn
from .options import add_platform_verbs, modules_of, platform_root


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
    )


def build(args: argparse.Namespace) -> int:
    wanted = modules_of(args.ex)
    try:
        out = prairielearn.build(Path(args.out), wanted)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    kit, image = prairielearn.KIT, prairielearn.IMAGE
    print(f"wrote {out}: questions/ (one per module), serverFilesCourse/{kit}/ (the grader)")
    print(f"build the grading image `{image}` from serverFilesCourse/{kit}/Dockerfile")
    return 0


def run(args: argparse.Namespace) -> int:
    """`prairielearn-run`: grade inside the platform, under the run's settings."""
    settings = platform_root(args, "PrairieLearn", "prairielearn_root")
    if settings is None:
        return 2
    return prairielearn.run(settings.prairielearn_root, settings)
