"""The course: its exercise modules, in the order students meet them. The one source of order.

The table in README.md, the "Exercise group N" line of each solution's docstring, the order of
the grading table and of results.json all follow MODULES; a kit test checks the first two.
"""

from __future__ import annotations

MODULES: tuple[str, ...] = (
    "attention",
    "masks",
    "multihead",
    "positional",
    "blocks",
    "diagnostics",
    "gpt",
    "plots",
    "efficient",
    "flash",
    "rotary",
    "modern_blocks",
    "gqa",
    "kvcache",
    "mla",
    "llama",
    "induction",
)


class UnknownModule(ValueError):
    """A module list named something that is not an exercise module."""


def group(module: str) -> int:
    """The module's exercise group number (1-based course position)."""
    return MODULES.index(module) + 1


def parse_modules(ex: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """`EX=...` as a list of modules in course order; empty means every module.

    Accepts "attention,masks", "attention.py", lists of names; raises UnknownModule naming
    what was given and what is expected.
    """
    if ex is None:
        return list(MODULES)
    if isinstance(ex, str):
        ex = ex.split(",")
    if not isinstance(ex, (list, tuple)) or not all(isinstance(m, str) for m in ex):
        raise UnknownModule(f"expected a comma-separated list of module names, got {ex!r}")
    wanted = [m.strip().removesuffix(".py") for m in ex if m.strip()]
    for name in wanted:
        if name not in MODULES:
            raise UnknownModule(
                f"unknown exercise module {name!r}; expected one of {', '.join(MODULES)}"
            )
    return [m for m in MODULES if m in wanted] or list(MODULES)
