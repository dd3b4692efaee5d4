"""Each exercise module's misconceptions as data: autograder/checks/<module>/misconceptions.toml.

Each table of the file is one misconception, under its id (unique across the kit):

    [local-window-off-by-one]
    message = "With window={window}, your local attention lets each query see {seen} keys..."
    idea = "..."       # hint level 1 (core.HINT_LEVELS): the idea
    operation = "..."  # level 2: the operation or API to use
    code = "..."       # level 3: nearly the code

A level left out is not written (core.Misconception.level falls back to the nearest one).
The texts are English str.format templates whose {placeholders} the verdict that detects the
mistake fills; they are the msgids of the module's gettext catalog, checks-<module>.po, which
`make translations` (catalogs.py) extracts from these files in the order they are written.

A judge loads its module's file, `MISTAKES = misconceptions_of(__name__)`, and names each
mistake by its id where it detects it, `Failure(MISTAKES["local-window-off-by-one"], ...)`: the
id the student reads in the feedback, the mutants' `# expects:` and this file's table are one
name, with no second one to keep in step. Another module's are imported as
`from ..attention.judge import MISTAKES as ATTENTION_MISTAKES`. Loading declares every
misconception of the file in core's registry, once, whichever judge file of the module asks
first; tests/kit/test_misconception_data.py proves every id used is declared and every one
declared is used.

A difference that no misconception names is the kit's "wrong-values" (core.check). Its hint
ladder is each exercise's own, in autograder/checks/<module>/wrong_values.toml, one table per
exercise (the function, class or method a check grades, Check.exercise), with the three
levels of that exercise's own computation:

    [layer_norm]
    idea = "..."       # what the computation is, in words
    operation = "..."  # the operations and APIs, in order
    code = "..."       # nearly the code, at least as specific as the operation

`own_ladder` gives the misconception with that ladder in place of core's (which stays for a
check outside any exercise); its texts are msgids of checks-<module>.po too.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from . import check as core
from . import paths

# Each exercise's wrong-values ladder: read where core builds a result (core.check), the one
# place; named here too, beside the misconceptions' data
from .check import LADDER_FILE as LADDER_FILE
from .check import LEVEL_KEYS
from .check import ladder_file as ladder_file
from .check import ladders as ladders
from .check import own_ladder as own_ladder
from .check import read_ladders as read_ladders

FILE_NAME = "misconceptions.toml"
KEYS = ("message", *LEVEL_KEYS)
assert len(LEVEL_KEYS) == len(core.HINT_LEVELS)


def data_file(module: str) -> Path:
    """autograder/checks/<module>/misconceptions.toml."""
    return paths.CHECKS / module / FILE_NAME


def module_of(name: str) -> str:
    """The exercise module of a judge's __name__ (autograder.checks.<module>.judge...)."""
    parts = name.split(".")
    if len(parts) < 3 or parts[:2] != ["autograder", "checks"]:
        raise ValueError(f"{name} is not a module of autograder/checks/<module>/")
    return parts[2]


def read(path: Path) -> dict[str, tuple[str, tuple[str, str, str]]]:
    """{id: (message, (idea, operation, code))} in the file's order; ValueError for a table
    with an unknown key, a missing message or a text that is not a string."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    found: dict[str, tuple[str, tuple[str, str, str]]] = {}
    for mid, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: {mid!r} is not a table")
        unknown = set(entry) - set(KEYS)
        if unknown:
            raise ValueError(f"{path}: [{mid}] has unknown keys {sorted(unknown)}; keys: {KEYS}")
        texts = {k: entry.get(k, "") for k in KEYS}
        if not all(isinstance(t, str) for t in texts.values()) or not texts["message"]:
            raise ValueError(f"{path}: [{mid}] needs a message, and every text is a string")
        idea, operation, code = (texts[k] for k in LEVEL_KEYS)
        found[mid] = (texts["message"], (idea, operation, code))
    return found


@cache
def _declared(module: str) -> Mapping[str, core.Misconception]:
    origin = f"autograder.checks.{module}"
    return {
        mid: core.misconception(mid, message, hints, module=origin)
        for mid, (message, hints) in read(data_file(module)).items()
    }


def misconceptions_of(name: str) -> Mapping[str, core.Misconception]:
    """{id: Misconception} of the module whose judge is `name` (its __name__), declared."""
    return _declared(module_of(name))
