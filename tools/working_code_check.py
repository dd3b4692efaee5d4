"""Does the student copy hold a working exercise? (`python tools/working_code_check.py`)

Run with a copy's autograder/ importable (PYTHONPATH=<copy>, as tests/kit/test_dist.py does),
this imports every module of that autograder package (but __main__, which runs the command
line when imported), and takes every function and class defined there (public or not) that
shares a name or a signature (its parameter names, or the exercise's required ones) with an
exercise of solutions/ (the student-facing API: the public functions and classes of
solutions/<module>.py). Each candidate is put in place of that exercise in the solution's
module and every fast check of the module is probed with it, on the public inputs
(probing.make_inputs(check, fixtures.PUBLIC_SEED)), as `make grade` probes a student's module;
the solution's own outputs on the same inputs are the reference. A candidate is WORKING when
it was called in at least one check and every check that called it gave the reference's
outputs (within autograder/core/tolerances.py); PARTIAL when only some did.

Prints one JSON object: {"autograder": where the package came from, "skipped": {module: why},
"candidates": [...], "working": [...], "partial": [...]}, each candidate as
"autograder.x.y:name -> module.exercise". Exit status 0 (the caller decides what may work).

    PYTHONPATH=<copy> python tools/working_code_check.py --solutions solutions [--modules x,y]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from pathlib import Path
from typing import Any

# Never imported: running it is running the command line (argparse on this process's argv).
SKIP = {"autograder.__main__": "runs the command line when imported"}


def _names(obj: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(every parameter's name, the required ones') of a function or class, or None."""
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    every = tuple(p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    required = tuple(p.name for p in params if p.kind in plain and p.default is p.empty)
    return every, required


def exercise_api(solution) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """{name: (parameter names, required ones)} of the exercises of a solution's module: the
    public functions and classes it defines that hold a `### BEGIN SOLUTION` region (what
    the stub leaves for the student; the code the stub gives, such as gpt's CharVocab, is no
    exercise)."""
    lines = Path(solution.__file__).read_text().splitlines()
    api = {}
    for node in ast.parse("\n".join(lines)).body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
            continue
        body = lines[node.lineno - 1 : node.end_lineno]
        if not any(line.strip() == "### BEGIN SOLUTION" for line in body):
            continue
        names = _names(getattr(solution, node.name))
        if names is not None:
            api[node.name] = names
    return api


def checks_of(exercise: str, solution, checks) -> list:
    """The checks that grade `exercise` (Check.exercise names it, or one of its methods)."""
    obj = getattr(solution, exercise)
    methods = set(vars(obj)) if inspect.isclass(obj) else set()
    return [c for c in checks if c.exercise.split(".")[0] == exercise or (c.exercise in methods)]


def copy_objects() -> tuple[list[tuple[str, str, Any]], dict[str, str]]:
    """[(module, name, object)] for every function and class each module of the autograder
    package defines, and {module: why it was not imported}."""
    import autograder

    found, skipped = [], dict(SKIP)
    for info in pkgutil.walk_packages(autograder.__path__, "autograder."):
        if info.name in SKIP:
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception as e:  # reported: the caller decides (the test fails on any)
            skipped[info.name] = f"import failed: {type(e).__name__}: {e}"
            continue
        for name, obj in vars(module).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == info.name:
                found.append((info.name, name, obj))
    return found, skipped


def _same(got: Any, want: Any) -> bool:
    import torch

    from autograder.core.tolerances import tolerance

    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.dtype != want.dtype:
            return False
        if got.shape != want.shape:
            return False
        if not want.is_floating_point() and not want.is_complex():
            return bool(torch.equal(got, want))
        return bool(torch.allclose(got, want, equal_nan=True, **tolerance(want.dtype)))
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(_same(got[k], want[k]) for k in want)
        )
    if isinstance(want, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(want)
            and all(_same(g, w) for g, w in zip(got, want, strict=True))
        )
    try:
        return bool(got == want)
    except Exception:
        return False


def _counted(obj: Any, calls: list[int]) -> Any:
    """`obj`, counting its calls (a class: its instances) in calls[0]."""
    if inspect.isclass(obj):
        init = obj.__init__

        def __init__(self, *args, **kwargs):
            calls[0] += 1
            init(self, *args, **kwargs)

        return type(obj.__name__, (obj,), {"__init__": __init__, "__module__": obj.__module__})

    @functools.wraps(obj)
    def call(*args, **kwargs):
        calls[0] += 1
        return obj(*args, **kwargs)

    return call


class StandInCalled(Exception):
    pass


@contextlib.contextmanager
def without_stand_ins(candidate: Any, stand_ins: set[str]):
    """While it lasts, the names in `candidate`'s module that are `stand_ins` (the shipped
    stand-in of the exercise's own module, or its functions) raise when called: a function
    that only hands the work to that stand-in (rotary's judge computes attention with trusted
    attention) is that stand-in, not code of its own. Other stand-ins stay: code that builds
    multi-head attention on trusted masks is still a working multi-head attention."""
    namespace = getattr(candidate, "__globals__", None)
    if namespace is None:
        namespace = vars(sys.modules[candidate.__module__])
    if candidate.__module__.startswith("autograder.trusted."):  # a stand-in itself
        yield
        return

    def refuse(*args, **kwargs):
        raise StandInCalled("a shipped stand-in")

    saved = {}
    for name, value in list(namespace.items()):
        owner = getattr(value, "__name__", "") if inspect.ismodule(value) else ""
        owner = owner or (getattr(value, "__module__", "") if callable(value) else "")
        if owner in stand_ins and value is not candidate:
            saved[name] = value
            namespace[name] = refuse
    try:
        yield
    finally:
        namespace.update(saved)


def verdict(candidate: Any, exercise: str, solution, checks, references, stand_ins) -> str:
    """ "working", "partial" or "" (never called, or no check gave the reference's outputs)."""
    import types

    from autograder.core.fixtures import PUBLIC_SEED
    from autograder.run.probing import make_inputs, run_probe

    calls = [0]
    proxy = types.ModuleType(solution.__name__)
    proxy.__dict__.update(vars(solution))
    setattr(proxy, exercise, _counted(candidate, calls))
    matched = missed = 0
    for check in checks:
        calls[0] = 0
        try:
            with without_stand_ins(candidate, stand_ins):
                got = run_probe(check, proxy, make_inputs(check, PUBLIC_SEED))
        except BaseException as e:  # a candidate that raises does not compute the exercise
            if isinstance(e, KeyboardInterrupt):
                raise
            got = e
        if not calls[0]:
            continue
        if isinstance(got, BaseException) or not _same(got, references[check.slug]):
            missed += 1
        else:
            matched += 1
    if matched and not missed:
        return "working"
    return "partial" if matched else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solutions", required=True, help="the folder of the reference modules")
    parser.add_argument("--modules", default="", help="only these modules (comma-separated)")
    parser.add_argument(
        "--stand-ins",
        default=None,
        help="the stand-ins documented as shipped (default: the copy's trusted.IN_STUDENT_COPY)",
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import autograder
    from autograder import trusted
    from autograder.core import registry
    from autograder.core.fixtures import PUBLIC_SEED
    from autograder.run.probing import make_inputs, run_probe
    from autograder.run.submission import Submission

    modules = [m for m in args.modules.split(",") if m] or registry.modules()
    solutions = Submission(Path(args.solutions))
    shipped = trusted.IN_STUDENT_COPY if args.stand_ins is None else args.stand_ins.split(",")
    stand_ins = {f"autograder.trusted.{m}" for m in shipped if m}
    objects, skipped = copy_objects()
    report: dict[str, Any] = {
        "autograder": str(Path(autograder.__file__).resolve().parent),
        "stand_ins": sorted(stand_ins),
        "skipped": skipped,
        "candidates": [],
        "working": [],
        "partial": [],
    }
    for module in modules:
        solution = solutions.load(module)
        api = exercise_api(solution)
        checks = [c for c in registry.checks_of(module) if not c.slow]
        references: dict[str, Any] = {}
        for where, name, obj in objects:
            names = _names(obj)
            for exercise, (every, required) in api.items():
                # the same name; the same parameters; or the exercise's required ones (two or
                # more: one name alone, such as x, is shared by too much to mean anything)
                same_name = name == exercise
                same_signature = names is not None and (
                    (every and names[0] == every) or (len(required) > 1 and names[0] == required)
                )
                if not (same_name or same_signature):
                    continue
                label = f"{where}:{name} -> {module}.{exercise}"
                report["candidates"].append(label)
                graded = checks_of(exercise, solution, checks) or checks
                for c in graded:
                    if c.slug not in references:
                        references[c.slug] = run_probe(c, solution, make_inputs(c, PUBLIC_SEED))
                own = stand_ins & {f"autograder.trusted.{module}"}
                found = verdict(obj, exercise, solution, graded, references, own)
                if found:
                    report[found].append(label)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
