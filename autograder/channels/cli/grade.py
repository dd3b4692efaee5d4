"""`python -m autograder grade` (make grade, make grade-train): grade a submission folder with
the pytest suites and the reporting plugin (plugin.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ...core import syllabus
from ...core.errors import UsageError
from ...core.paths import ROOT
from ...core.settings import Settings
from .options import add_grading_options, modules_of


def register(verbs) -> None:
    grade = verbs.add_parser("grade", help="grade a submission folder")
    add_grading_options(grade)
    grade.add_argument(
        "--verbose",
        action="store_true",
        help="show what your code printed under every check (failing checks always show it)",
    )
    grade.add_argument(
        "--hints", default="", help="all: show every level of each failing check's hint ladder"
    )
    grade.add_argument(
        "--include-slow",
        action="store_true",
        help="also run the slow checks (gpt's training run): `make grade-train`",
    )
    grade.set_defaults(run=run)


def limit_flags(settings: Settings) -> list[str]:
    """The time limits' settings as resolved here (validated by Settings.resolve), as the
    plugin's flags: it builds the run's TimeLimits from them as every channel does
    (limits.TimeLimits.of)."""
    flags = []
    if settings.cpu_limit is not None:
        flags += ["--cpu-limit", str(settings.cpu_limit)]
    if settings.check_timeout is not None:
        flags += ["--check-timeout", str(settings.check_timeout)]
    return flags


def run(args: argparse.Namespace) -> int:
    modules = list(syllabus.MODULES)
    submission = Path(args.submission)
    if not submission.is_dir():
        raise UsageError(
            f"SUBMISSION={args.submission!r} is not a folder; expected a folder holding the "
            f"exercise modules ({', '.join(m + '.py' for m in modules)})"
        )
    wanted = modules_of(args.ex)
    present = [m for m in (wanted or modules) if (submission / f"{m}.py").is_file()]
    if not present:
        from ...run.submission import near_misses

        renames = [
            f"{name!r} to {m}.py" for m in wanted or modules for name in near_misses(submission, m)
        ]
        raise UsageError(
            f"{submission} holds none of the exercise modules "
            f"({', '.join(m + '.py' for m in wanted or modules)})"
            + (
                f"; the grader reads only those exact names: rename {', '.join(renames)}"
                if renames
                else ""
            )
        )
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UsageError(
                f"DEVICE={args.device!r}, but this machine has no CUDA device; use DEVICE=cpu"
            )
    elif args.device != "cpu":
        raise UsageError(f"DEVICE={args.device!r}: expected cpu or cuda (or cuda:N)")
    import pytest

    from ...plugin import GradeTable  # torch: only for this verb

    # Load only the plugins grading needs: the installed ones (hypothesis, anyio) that pytest
    # would load by itself cost seconds of imports and grade nothing.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # The grade is the kit's, whatever pytest options a student's shell carries for their own
    # projects: PYTEST_ADDOPTS="-n 4" (xdist is not loaded here) would stop the grading with a
    # usage error, "-x" or "--durations" would change the table. Their own `pytest
    # tests/graded/...` runs keep them.
    os.environ.pop("PYTEST_ADDOPTS", None)
    argv = [
        str(ROOT / "tests" / "graded"),
        "-p",
        "pytest_timeout",
        "-qq",  # with GradeTable's empty status letters: no "FFFF..." and no "83 failed" line
        "-o",
        "console_output_style=classic",
        "--tb=no",
        "-rN",
        "--no-header",
        "-p",
        "no:cacheprovider",  # make grade remembers nothing for pytest --lf
        # pytest's unraisable-exception plugin runs a full garbage collection at the session's
        # end, twice: with torch loaded, ~0.1 s of a one-module grade's 1.6 s. Student code
        # runs in other processes, so no unraisable exception of its can reach this one.
        "-p",
        "no:unraisableexception",
        "--rootdir",
        str(ROOT),
        "--submission",
        str(submission),
        "--device",
        args.device,
        "--results",
        args.results,
    ]
    if wanted:
        argv += ["--ex", ",".join(wanted)]
    if args.include_slow:
        argv += ["--include-slow"]
    argv += limit_flags(args.settings)
    if args.verbose:
        argv += ["--show-printed"]
    if args.hints:
        if args.hints != "all":
            raise UsageError(f"HINTS={args.hints!r}: expected HINTS=all (every hint level)")
        argv += ["--all-hints"]
    # The graded suites' conftest.py loads the grading plugin; GradeTable reports: the table,
    # results.json, report.html. A failing check fails its pytest item, but make grade exits
    # 0 whenever grading completed, whatever the score (a score is no error of the command).
    table = GradeTable()
    code = pytest.main(argv, plugins=[table])
    return 0 if table.completed else (int(code) or 3)
