"""`python -m autograder gradescope` (make gradescope) builds autograder.zip;
`gradescope-run` grades one upload inside Gradescope's container (channels/gradescope/).
One platform's build verb and run verb: one file, one form (options.add_platform_verbs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import gradescope
from .options import add_platform_verbs, modules_of, run_on_platform


def register(verbs) -> None:
    add_platform_verbs(
        verbs,
        "gradescope",
        build=build,
        run=run,
        out="build/autograder.zip",
        root_field="gradescope_root",
        build_help="build autograder.zip for Gradescope",
        run_help="grade /autograder/submission (Gradescope)",
    )


def build(args: argparse.Namespace) -> int:
    out = gradescope.build(Path(args.out), modules_of(args.ex))
    print(f"wrote {out} (setup.sh, run_autograder, requirements.lock, autograder/, solutions/)")
    return 0


def run(args: argparse.Namespace) -> int:
    """`gradescope-run`: grade inside the platform, under the run's settings."""
    return run_on_platform(args, "Gradescope", "gradescope_root", gradescope.run)
