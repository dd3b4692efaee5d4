"""The notebook runner: what the autograded test cells of the nbgrader notebooks call.

A test cell holds one Check and its points:

    from autograder.notebook import grade
    grade("attention.reference", globals())          # public tier: the shipped fixture

(the hidden tier, `hidden=True`, is `make autograde`'s, outside the kernel; an instructor can
call it in a kernel by hand, with ATTENTION_LAB_HIDDEN_SEED set.)

`grade` treats the notebook's namespace as the student's module, runs the same Check through
the same engine as `make grade` (engine.run_check), prints one line when it passes, and raises
`CheckFailed` (an AssertionError) carrying the misconception's message and hint when it does
not, so nbgrader gives the cell zero points and its feedback shows why.

Isolation (docs/principles.md, principle 6): while the check runs, every name in the
namespace that is an exercise of *another* module (the multihead notebook's
`scaled_dot_product_attention`) is swapped for the trusted stand-in from
autograder/trusted/, then put back.

Warnings and stderr: anything the student's code writes to stderr during the check (a PyTorch
UserWarning, a print to sys.stderr) is re-printed on stdout, after a note. nbgrader gives zero
to a test cell with any stderr output, and a warning is no mistake.

This is the in-process placement of a check (engine.py): the only one, and only for the
student's own feedback in their kernel; nothing a kernel says is a grade. Under `make
autograde` (ATTENTION_LAB_HIDDEN=outside in the kernel's environment) no test cell runs a
check in the kernel: each prints that it is graded outside the notebook, and
autograder/channels/nbgrader/autograde.py grades the notebook's code in the sandbox placement (the
student's own seed, the CPU limits and crash and timeout policy of every official channel) and
writes the gradebook's scores, so nothing a cell patches in the kernel counts, and an endless loop
costs the sandbox's CPU seconds once per function instead of nbgrader's cell timeout per test
cell. An instructor can still run the hidden tier in a kernel, to try a source notebook, by
setting ATTENTION_LAB_HIDDEN_SEED; the expected outputs are then computed from solutions/.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import io
import os
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

from . import trusted
from .core import registry
from .core.check import Check, Result
from .core.i18n import _, hint_lines, message, status_word
from .core.i18n import name as i18n_name
from .core.paths import SOLUTIONS
from .core.references import References
from .core.settings import HIDDEN_SEED_VAR, HIDDEN_VAR, Settings, SettingsError
from .feedback.ladder import NOTEBOOK_LEVELS
from .run import limits
from .run.engine import run_check
from .run.submission import trusted_modules

# The kernel's settings travel in its environment (course.kernel_env sets them for nbgrader);
# a test cell's call resolves them once (settings.py).
SEED_VARIABLE = HIDDEN_SEED_VAR  # the seed of an in-kernel hidden run (instructors only)
HIDDEN_VARIABLE = HIDDEN_VAR  # "outside": make autograde judges every check
OUTSIDE_NOTE = "hidden inputs: graded outside this notebook by the sandboxed grader"


class CheckFailed(AssertionError):
    """A check did not pass; the message names the misconception and the hint."""


class NotebookSubmission:
    """Duck-types Submission for engine.run_check: the notebook namespace is the module.

    `path` is the folder of the files the kernel compiles cells into, so that a
    NotImplementedError raised by a cell counts as "not attempted" (probing.raised_in).
    """

    def __init__(self, module: str, namespace: dict[str, Any]):
        self.module_name = module
        self.namespace = namespace
        self.path = _cell_folder(namespace)

    def load(self, module: str) -> types.ModuleType:
        view = types.ModuleType(f"notebook:{module}")
        view.__dict__.update(self.namespace)
        return view


def _cell_folder(namespace: dict[str, Any]) -> Path:
    """Where the kernel files the code of this namespace's cells (ipykernel: a temp folder)."""
    folders: collections.Counter[Path] = collections.Counter()
    main = namespace.get("__name__", "__main__")
    for value in list(namespace.values()):
        targets = [value]
        if isinstance(value, type):
            targets = list(vars(value).values())
        for target in targets:
            code = getattr(target, "__code__", None)
            if code is not None and getattr(target, "__module__", None) == main:
                folders[Path(code.co_filename).resolve().parent] += 1
    if folders:
        return folders.most_common(1)[0][0]
    try:  # nothing defined yet: the folder ipykernel would use
        from ipykernel.compiler import get_tmp_directory

        return Path(get_tmp_directory()).resolve()
    except ImportError:  # pragma: no cover - outside a kernel
        return Path.cwd().resolve()


def _stand_ins(module: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """{name: trusted object} for the names in `namespace` that other modules' exercises own."""
    swaps: dict[str, Any] = {}
    for other in trusted_modules():
        if other == module:
            continue
        stand_in = importlib.import_module(f"{trusted.__name__}.{other}")
        for name, value in vars(stand_in).items():
            if name.startswith("_") or name not in namespace:
                continue
            if getattr(value, "__module__", None) == stand_in.__name__:
                swaps[name] = value
        if other in namespace and isinstance(namespace[other], types.ModuleType):
            swaps[other] = stand_in  # `from . import attention` style
    return swaps


@contextlib.contextmanager
def _swapped(namespace: dict[str, Any], swaps: dict[str, Any]):
    saved = {name: namespace[name] for name in swaps}
    namespace.update(swaps)
    try:
        yield
    finally:
        namespace.update(saved)


@contextlib.contextmanager
def _stderr_to_stdout():
    """Collect warnings and stderr during the check; re-print them on stdout afterwards."""
    buffer = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buffer):
        warnings.simplefilter("always")
        yield
    lines = [f"{w.category.__name__}: {w.message}" for w in caught]
    if buffer.getvalue().strip():
        lines.append(buffer.getvalue().rstrip())
    if lines:
        print("Note: your code wrote this to stderr (a warning costs no points):")
        for line in dict.fromkeys(lines):  # once each, in order
            print("    " + line.replace("\n", "\n    "))


def hidden_seed(settings: Settings) -> int:
    """The seed of an in-kernel hidden run: Settings.hidden_seed, from $ATTENTION_LAB_HIDDEN_SEED
    (instructors only)."""
    if settings.hidden_seed is None:
        raise RuntimeError(
            "hidden tests run on the instructor's side only, outside the notebook: "
            f"`make autograde` grades them (set {SEED_VARIABLE} to try them in a kernel)"
        )
    return settings.hidden_seed


def _settings() -> Settings:
    """The kernel's settings (a test cell's call is an entry point: it resolves them)."""
    try:
        return Settings.resolve(environ=os.environ)
    except SettingsError as e:
        raise RuntimeError(str(e)) from None


_REFERENCES: dict[int | None, References] = {}


def _references(seed: int | None) -> References:
    """The one References API (public fixtures, or the hidden tier computed from solutions/)."""
    if seed not in _REFERENCES:
        if seed is not None and not (SOLUTIONS / "__init__.py").is_file():
            raise RuntimeError("hidden tests need solutions/ (the instructor's copy of the kit)")
        _REFERENCES[seed] = References.public() if seed is None else References.hidden(seed)
    return _REFERENCES[seed]


def _defined(check: Check, namespace: dict[str, Any]) -> bool:
    """Is the exercise this check grades defined here (a name, or a method of a class)?"""
    name = check.exercise
    if not name or name in namespace:
        return True
    owner, _, method = name.rpartition(".")  # "RotaryAttention.forward": the class's own method
    if owner:
        return isinstance(namespace.get(owner), type) and method in vars(namespace[owner])
    return any(isinstance(v, type) and name in vars(v) for v in list(namespace.values()))


def run(
    check_id: str,
    namespace: dict[str, Any],
    *,
    hidden: bool = False,
    settings: Settings | None = None,
) -> Result:
    """Grade one check on a notebook namespace; returns the engine's Result. `settings`: the
    kernel's (default: resolved now, from its environment)."""
    check = registry.find(check_id)
    settings = settings or _settings()
    refs = _references(hidden_seed(settings) if hidden else None)
    seed, reference = refs.seed, refs.get(check)
    submission = NotebookSubmission(check.module, namespace)
    # The first uses the module declares, paid once per kernel before the check, as every
    # placement pays them (registry.warm_ups): a measured run must not count their imports.
    limits.warm_up(*limits.warm_ups_of([check]))
    with _swapped(namespace, _stand_ins(check.module, namespace)), _stderr_to_stdout():
        result = run_check(check, submission, reference, seed=seed)
    # A crash names the kernel's file for the cell (e.g. 2391847.py): say "your cell" instead.
    result.message = _in_cell(result.message)
    result.details = {
        k: _in_cell(v) if isinstance(v, str) else v for k, v in result.details.items()
    }
    return result


def _in_cell(text: str) -> str:
    return re.sub(r"in [\w-]+\.py, line", "in your code cell, line", text)


def grade(check_id: str, namespace: dict[str, Any], *, hidden: bool = False) -> None:
    """The test cell's call: prints a line when the check passes, raises CheckFailed if not.

    It returns None on purpose: a value would be the cell's output, and nbgrader reads a
    test cell's output as partial credit."""
    __tracebackhide__ = True  # IPython (and pytest) leave this frame out of the traceback
    check = registry.find(check_id)
    # Under `make autograde` the hidden tier, and a slow check (one call, trains once), are
    # judged outside the kernel only.
    settings = _settings()
    outside = settings.hidden == "outside"
    if (hidden or check.slow) and outside:
        print(f"{OUTSIDE_NOTE} ({check.name})")
        return
    tier = _(" (hidden inputs)") if hidden else ""
    if not _defined(check, namespace):
        raise CheckFailed(
            "[not-defined] "
            + _(
                "{exercise} is not defined in this notebook: run the cell that defines it "
                "(or, if you deleted that cell, restore it from the release)."
            ).format(exercise=check.exercise)
        )
    if outside:  # every check: the sandbox placement decides (channels/nbgrader/autograde.py)
        print(
            _("graded outside this notebook by the sandboxed grader ({name})").format(
                name=check.name
            )
        )
        return
    result = run(check_id, namespace, hidden=hidden, settings=settings)
    if result.passed:
        points = f"{result.points:g}"
        line = _("{tag}  {name}{tier}: {score} / {points} points").format(
            tag=_("PASS"), name=result.name, tier=tier, score=points, points=points
        )
        print(line)
        return
    text = feedback(result)
    if result.note:  # advice worth no points: shown, never a failed cell
        line = _("{tag}  {name}{tier}: {score} / {points} points").format(
            tag=_("NOTE"), name=result.name, tier=tier, score="0", points="0"
        )
        print(f"{line}\n{text}")
        return
    if result.status == "error":
        print(result.extra.get("traceback", ""), file=sys.stdout)
    raise CheckFailed(f"{i18n_name(result.name)}{tier}: {status_word(result.status)}.\n{text}")


def feedback(result: Result) -> str:
    """A failing check's feedback in a notebook: the message and the first hint level only
    (ladder.NOTEBOOK_LEVELS: no state is kept between a student's runs of a cell)."""
    label = f"[{result.misconception}] " if result.misconception else ""
    lines = [label + message(result), *hint_lines(result, NOTEBOOK_LEVELS)]
    return "\n".join(lines)
