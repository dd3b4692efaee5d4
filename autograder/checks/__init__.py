"""The checks, one file per exercise module, discovered by name.

Each autograder/checks/<module>.py defines:
    MODULE  the exercise module it grades ("attention" grades attention.py)
    ORDER   its place in the course (the table and results.json follow it)
    CHECKS  a list of Check, in the order students meet them
and declares its misconceptions with core.misconception(...) near the checks that use them.
Adding an exercise module means adding one file here; nothing else lists the modules.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from ..core import Check


@cache
def _registry() -> dict[str, object]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        found[mod.MODULE] = mod
    return dict(sorted(found.items(), key=lambda kv: kv[1].ORDER))


def modules() -> list[str]:
    """The exercise modules, in course order."""
    return list(_registry())


def checks_of(module: str) -> list[Check]:
    if module not in _registry():
        raise KeyError(f"unknown exercise module {module!r}; expected one of {modules()}")
    return list(_registry()[module].CHECKS)


def all_checks() -> list[Check]:
    return [c for m in modules() for c in checks_of(m)]


def find(check_id: str) -> Check:
    for check in all_checks():
        if check.id == check_id:
            return check
    raise KeyError(f"unknown check {check_id!r}")
