"""The checks of every exercise module (judge side: importing this imports every verdict).

Each exercise module's checks are a package, autograder/checks/<module>/:
    probe*.py   input builders and probes: the only kit code a process that runs student
                code imports (with core and probing); never verdicts or reference code
    judge*.py   models of known wrong computations, verdicts, and the check declarations:
                judge.py holds CHECKS, a core.CheckList
    checks.toml  each check's title and points, under its slug, in course order
                (core.declared_checks); the titles are msgids of the module's catalog
    misconceptions.toml  the misconceptions (id, message, hint ladder) the judges load by id
                (misconception_data.py); the msgids of the module's gettext catalog
    wrong_values.toml  each exercise's own hint ladder for a difference no misconception names
                (misconception_data.own_ladder), msgids of the same catalog
Course order comes from syllabus.MODULES; nothing else lists the modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from . import check as core
from . import paths, syllabus
from .check import Check


def modules() -> list[str]:
    """The exercise modules, in course order."""
    return list(syllabus.MODULES)


def _known(module: str) -> None:
    if module not in syllabus.MODULES:
        raise KeyError(f"unknown exercise module {module!r}; expected one of {modules()}")


@cache
def _checks(module: str) -> tuple[Check, ...]:
    judge = importlib.import_module(f"autograder.checks.{module}.judge")
    found = tuple(judge.CHECKS)
    for check in found:
        if check.module != module:
            raise ValueError(f"{judge.__name__} declares {check.id}, not a check of {module}")
    slugs, tables = [c.slug for c in found], list(core.declared_checks(module))
    if slugs != tables:
        raise ValueError(
            f"{judge.__name__} declares the checks {slugs}, but "
            f"checks/{module}/{core.DATA_FILE} has tables for {tables}, in this order"
        )
    return found


def checks_of(module: str) -> list[Check]:
    _known(module)
    return list(_checks(module))


def files_of(module: str) -> list[Path]:
    """The files of `module`'s checks package (their hash goes into the fixture manifest)."""
    _known(module)
    return sorted((paths.CHECKS / module).glob("*.py"))


def probe_files_of(module: str) -> list[Path]:
    return [f for f in files_of(module) if f.name.startswith("probe")]


def warm_ups(modules: Iterable[str], slow: bool = False) -> list[str]:
    """The costly first uses (run/limits.py, WARM_UPS) that the probes of `modules` need paid
    before any student code runs, outside every check's CPU seconds: each checks package's
    WARM_UP and, when the slow checks (training runs) are graded too, its TRAIN_WARM_UP.
    Declared in the package's __init__.py, so this imports no judge and no torch: a channel
    tells its sandbox's zygote what to warm before it imports torch itself."""
    found: dict[str, None] = {}
    for module in modules:
        _known(module)
        package = importlib.import_module(f"autograder.checks.{module}")
        found.update(dict.fromkeys(getattr(package, "WARM_UP", ())))
        if slow:
            found.update(dict.fromkeys(getattr(package, "TRAIN_WARM_UP", ())))
    return list(found)


def all_checks() -> list[Check]:
    return [c for m in modules() for c in checks_of(m)]


def find(check_id: str) -> Check:
    for check in all_checks():
        if check.id == check_id:
            return check
    raise KeyError(f"unknown check {check_id!r}")


def all_misconceptions() -> dict[str, core.Misconception]:
    """Every declared misconception (importing every judge first)."""
    all_checks()
    return core.declared()
