"""Command-line options several verbs share: one definition, one validation of EX.

`grade` and `watch` take the same grading options; `gradescope` and `prairielearn` each add a
build verb and a run verb of the same form. Each is declared here once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ...core import syllabus
from ...core.errors import UsageError
from ...core.settings import ENV, Settings


def add_grading_options(parser: argparse.ArgumentParser) -> None:
    """--submission, --ex, --device, --results, --cpu-limit: what every grading verb takes."""
    parser.add_argument("--submission", default="assignments")
    parser.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--results", default="build/results.json")
    parser.add_argument(
        "--cpu-limit", type=float, default=None, help="CPU seconds per check (default: calibrated)"
    )


def modules_of(ex: str) -> list[str]:
    """EX=... as modules in course order; [] when EX is empty (every module)."""
    try:
        return syllabus.parse_modules(ex) if ex.strip() else []
    except syllabus.UnknownModule as e:
        raise UsageError(f"EX={ex!r}: {e}") from None


def add_platform_verbs(
    verbs,
    name: str,
    *,
    build: Callable[[argparse.Namespace], int],
    run: Callable[[argparse.Namespace], int],
    out: str,
    root_field: str,
    build_help: str,
    run_help: str,
    build_options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    """`<name>` builds what a grading platform needs (EX=... chooses the modules);
    `<name>-run` grades one submission inside the platform, under the root Settings'
    `root_field` resolves (--root, else its ATTENTION_LAB_* variable, else the default:
    `platform_root`). `build_options` adds the build verb's own options."""
    b = verbs.add_parser(name, help=build_help)
    b.add_argument("--out", default=out)
    b.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    if build_options is not None:
        build_options(b)
    b.set_defaults(run=build)
    variable, default = ENV[root_field], getattr(Settings(), root_field)
    r = verbs.add_parser(f"{name}-run", help=run_help)
    r.add_argument("--root", default=None, help=f"default ${variable} or {default}")
    r.set_defaults(run=run)


def platform_root(args: argparse.Namespace, title: str, root_field: str) -> Settings | None:
    """The run's settings (cli.main's) with --root over the environment's root; None (and the
    error said) when that root is not a folder."""
    settings: Settings = args.settings
    if args.root:
        settings = settings.but(**{root_field: Path(args.root)})
    root = getattr(settings, root_field)
    if not root.is_dir():
        print(f"error: the {title} root {str(root)!r} is not a folder", file=sys.stderr)
        return None
    return settings


def run_on_platform(
    args: argparse.Namespace, title: str, root_field: str, grade: Callable[[Path, Settings], int]
) -> int:
    """A platform's run verb: `grade(root, settings)` under platform_root's settings; 2 when
    the root is not a folder."""
    settings = platform_root(args, title, root_field)
    return 2 if settings is None else grade(getattr(settings, root_field), settings)
