"""The checks, one file per exercise module, discovered by name.

Each autograder/checks/<name>.py defines:
    MODULE  the exercise module it grades ("attention" grades attention.py)
    ORDER   its place in the course (the table and results.json follow it)
    CHECKS  a list of Check, in the order students meet them
and declares its misconceptions with core.misconception(...) near the checks that use them.
Adding an exercise module means adding one file here; nothing else lists the modules.
A module with several independent parts (diagnostics.py) may have several files with the
same MODULE, e.g. diagnostics_entropy.py and diagnostics_sqrt_dk.py; their CHECKS follow
each other in ORDER.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from ..core import Check


@cache
def _registry() -> dict[str, list]:
    """{exercise module: [checks files]}, both in course order."""
    files = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            files.append(importlib.import_module(f"{__name__}.{info.name}"))
    found: dict[str, list] = {}
    for mod in sorted(files, key=lambda m: m.ORDER):
        found.setdefault(mod.MODULE, []).append(mod)
    return found


def modules() -> list[str]:
    """The exercise modules, in course order."""
    return list(_registry())


def files_of(module: str) -> list[Path]:
    """The checks files that grade `module` (their hash goes into the fixture manifest)."""
    _known(module)
    return [Path(f.__file__) for f in _registry()[module]]


def checks_of(module: str) -> list[Check]:
    _known(module)
    return [c for f in _registry()[module] for c in f.CHECKS]


def _known(module: str) -> None:
    if module not in _registry():
        raise KeyError(f"unknown exercise module {module!r}; expected one of {modules()}")


def all_checks() -> list[Check]:
    return [c for m in modules() for c in checks_of(m)]


def find(check_id: str) -> Check:
    for check in all_checks():
        if check.id == check_id:
            return check
    raise KeyError(f"unknown check {check_id!r}")
