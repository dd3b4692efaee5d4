"""`python -m autograder <verb>`: what the Makefile's targets call, one file per verb.

Each verb is a module of this package with `register(verbs)` (its subparser, its options) and
`run(args)` (what it does: it calls into the channel modules, batch.py, watch.py, nbgrader/,
gradescope/, prairielearn.py, class_report.py, which keep the logic). VERBS below is the one
registry: the order in which `python -m autograder --help` lists them.

    grade         grade a submission folder (the pytest suites, with the plugin)
    hint          the next hint level for the first failing check
    watch         re-grade a module each time it is saved
    stubs         regenerate assignments/ from solutions/
    fixtures      regenerate the public reference outputs from solutions/ (changed modules)
    new-module    scaffold every file of a new exercise module (--name x)
    dist          build the student copy (no solutions) as a .tar.gz
    translations  .pot templates from the code; .po catalogs merged
    checks        list every check: its id (course.toml's [points] keys), points and title
    batch         grade a folder of submissions, sandboxed (batch.py)
    class-report  the class as a whole: HTML, plots, LMS CSVs
    gradescope    build the Gradescope autograder zip; gradescope-run runs inside it
    prairielearn  write a PrairieLearn course; prairielearn-run grades inside it
    course, release, collect, autograde, regrade, feedback, export
                  the nbgrader cycle (nbgrader/)
`python -m autograder --help` lists every verb with its options.

A build verb and the run verb of the same platform (gradescope and gradescope-run,
prairielearn and prairielearn-run) share a file: one platform, one form (options.py).
Everything it is given is validated here, with errors that say what was expected. The run's
settings are resolved once, here, for every verb (`settings_of`): the flags over the
environment over the course's course.toml (its [limits] apply to every channel alike).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

from ...core import course_config, i18n, paths
from ...core.errors import UsageError
from ...core.settings import Settings, SettingsError

# The verb modules of this package, in the order --help lists them.
VERBS: tuple[str, ...] = (
    "grade",
    "hint",
    "watch",
    "stubs",
    "fixtures",
    "new_module",
    "dist",
    "translations",
    "checks",
    "batch",
    "class_report",
    "gradescope",
    "prairielearn",
    "course",
    "release",
    "collect",
    "autograde",
    "regrade",
    "feedback",
    "export",
)


def verb_modules() -> list[ModuleType]:
    """The verb modules (VERBS), imported: none of them imports torch at its top."""
    return [importlib.import_module(f"{__name__}.{name}") for name in VERBS]


def parser() -> argparse.ArgumentParser:
    """The command line: every verb of VERBS, registered by its own module."""
    top = argparse.ArgumentParser(
        prog="python -m autograder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = top.add_subparsers(dest="verb", required=True)
    for module in verb_modules():
        module.register(verbs)
    top.add_argument(
        "--lang",
        default="",
        help="language of the feedback: en or zh_CN (default: LANGUAGE, LC_ALL, LC_MESSAGES, LANG)",
    )
    top.add_argument(
        "--warm",
        choices=("0", "1"),
        default=None,
        help="make grade's WARM=: 1 lets a warm grader run the next grading (warm.py; "
        "decided before this parser runs, by python -m autograder)",
    )
    return top


def course_toml_of(args: argparse.Namespace) -> Path:
    """The course.toml whose [limits] the verb's settings read: the nbgrader verbs' --root's,
    every other verb's course/course.toml (batch, grade, watch, ... alike)."""
    if getattr(args, "course_root", False):
        return Path(args.root) / course_config.FILE
    return paths.COURSE_TOML


def settings_of(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    course_toml: Path | None = None,
) -> Settings:
    """The run's settings, resolved once for every verb (settings.py): the flags (make's
    variables among them) over the environment over `course_toml` (default: the verb's
    course, `course_toml_of`). Raises SettingsError."""
    return Settings.resolve(
        cli_args=args,
        environ=os.environ if environ is None else environ,
        course_toml=course_toml if course_toml is not None else course_toml_of(args),
    )


def use_terminal(encodings: Sequence[str]) -> None:
    """stdout and stderr (fds 1 and 2) in these encodings, writing what they cannot show as
    ASCII (unicode_math.ascii_terminal): the warm grader's fork writes as its client's
    terminal takes, as the client's own direct run would (run/warm.py)."""
    from ...feedback.unicode_math import ascii_terminal

    out, err = encodings
    sys.stdout = open(1, "w", buffering=1, encoding=out, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding=err, closefd=False)  # noqa: SIM115
    ascii_terminal(keep_encoding=True)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # The run's settings, resolved once; each verb reads them from args.settings.
    try:
        args.settings = settings_of(args)
    except SettingsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.settings.language:
        i18n.use(args.settings.language)
    try:
        return int(args.run(args))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
