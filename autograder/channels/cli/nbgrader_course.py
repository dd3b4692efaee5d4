"""What the nbgrader course's verbs share on the command line (course.py, release.py,
collect.py, autograde.py, regrade.py, feedback.py, export.py): the --root option and one way
to load the course's machinery.

Registered without importing nbgrader or nbformat: they are instructor extras
(requirements-instructor.lock), and a student's `python -m autograder grade` must start
without them. The run's settings are cli.main's (settings_of): the flags over ATTENTION_LAB_*
over --root's course.toml [limits] (`course_root` tells cli.course_toml_of so).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ...core.errors import UsageError


def add_verb(verbs, verb: str, text: str, run: Callable[[argparse.Namespace], int]) -> Any:
    """The parser of one course verb: --root, and the run's settings from its course.toml."""
    p = verbs.add_parser(verb, help=text)
    p.add_argument("--root", default="course", help="the course directory")
    p.set_defaults(run=run, course_root=True)
    return p


def course() -> ModuleType:
    """channels/nbgrader/course.py, or a UsageError saying how to install the extras."""
    try:
        from ..nbgrader import course as module
    except ImportError as e:  # the student set has no nbgrader / nbformat
        raise UsageError(
            f"{e.name or e}: the instructor extras are not installed in this environment; "
            "`make venv-instructor` installs them (every instructor make verb does it first)"
        ) from None
    return module


def call(args: argparse.Namespace, action: Callable[[ModuleType, Path], object]) -> int:
    """Run `action(course module, root)`; the course's own errors as usage errors."""
    from ...run.sandbox.jail import SandboxUnavailable

    module = course()
    module.use_tools_path()  # nbgrader's API in this process starts tools by name
    try:
        action(module, Path(args.root))
    except (FileNotFoundError, ValueError, RuntimeError, SandboxUnavailable) as e:
        raise UsageError(str(e)) from None  # autograde: the kernels cannot be confined here
    return 0


def per_assignment(args: argparse.Namespace, verb: str) -> int:
    """A course verb that is one call: course.<verb>(root, the --assignment list) (release,
    collect, feedback)."""
    return call(args, lambda course, root: getattr(course, verb)(root, args.assignment))


def per_assignment_parser(
    verb: str, text: str, run: Callable[[argparse.Namespace], int]
) -> Callable[[Any], None]:
    """The register(verbs) of such a verb: --root and --assignment."""

    def register(verbs: Any) -> None:
        p = add_verb(verbs, verb, text, run)
        p.add_argument("--assignment", action="append", help="only these assignments")

    return register
