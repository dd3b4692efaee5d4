"""The data every runner shares: misconceptions, checks and their results."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- misconceptions


@dataclass(frozen=True)
class Misconception:
    """A named, classic mistake: what the student probably did, and how to fix it.

    `message` and `hint` may hold `{placeholders}` filled by the verdict that detects it.
    """

    id: str
    message: str
    hint: str = ""


_MISCONCEPTIONS: dict[str, Misconception] = {}


def misconception(id: str, message: str, hint: str = "") -> Misconception:
    """Declare a misconception once; ids are unique across the whole kit."""
    if id in _MISCONCEPTIONS and _MISCONCEPTIONS[id] != Misconception(id, message, hint):
        raise ValueError(f"misconception id {id!r} is declared twice with different texts")
    _MISCONCEPTIONS[id] = Misconception(id, message, hint)
    return _MISCONCEPTIONS[id]


def all_misconceptions() -> dict[str, Misconception]:
    """Every declared misconception (importing every checks module first)."""
    from . import checks

    checks.modules()
    return dict(_MISCONCEPTIONS)


# Outcomes every check can have, whatever the exercise.
NOT_ATTEMPTED = misconception(
    "not-attempted",
    "{exercise} is not attempted yet: it still raises NotImplementedError.",
    "Replace the `raise NotImplementedError(...)` line in the TODO region with your code.",
)
IMPORT_ERROR = misconception(
    "import-error",
    "{file} could not be imported, so none of its exercises could be graded: {error}",
    "Fix this first: in the kit's folder, run `.venv/bin/python -c 'import {package}.{module}'` "
    "(the kit's own Python, which has torch) to see the full error.",
)
CRASH = misconception(
    "crash",
    "Your code raised {error} {where}",
    "Read the error and the line it names; check the shapes against the docstring.",
)
TIMEOUT = misconception(
    "timeout",
    "This check did not finish within {seconds} s: an endless loop, or far too slow.",
    "Look for a `while` loop that never ends, or a loop over elements that could be one "
    "tensor operation.",
)
WRONG_TYPE = misconception(
    "wrong-return-type",
    "{what} should be {expected}, but your code returned {got}.",
    "Check the `return` statement against the docstring.",
)
WRONG_SHAPE = misconception(
    "wrong-shape",
    "{what} has shape {got}, expected {expected}.",
    "Follow the shape comments in the docstring; print .shape after each step.",
)
WRONG_DTYPE = misconception(
    "wrong-dtype",
    "{what} has dtype {got}, expected {expected}.",
    "Do not hard-code a dtype: create new tensors with dtype=x.dtype (or use *_like).",
)
WRONG_DEVICE = misconception(
    "wrong-device",
    "{what} is on device {got}, expected {expected}.",
    "Create new tensors on the inputs' device (device=x.device) or pass `device` through.",
)
NOT_FINITE = misconception(
    "not-finite",
    "{what} contains NaN or infinity ({count} entries).",
    "Look for a softmax over a row that is all -inf, or a division by zero.",
)
WRONG_VALUES = misconception(
    "wrong-values",
    "The values of {what} differ from the reference: largest error {err:.3g} at index {index} "
    "(yours {got:.6g}, expected {want:.6g}).",
    "Compare your steps with the numbered hints in the TODO, on a tiny input you can check "
    "by hand.",
)
GRADER_ERROR = misconception(
    "grader-error",
    "The grader itself failed on this check ({error}). This is a bug in the kit, not in your code.",
    "Please report it to your instructor with the output above.",
)


class Failure(Exception):
    """Raised by a verdict: the student's result shows `misconception`."""

    def __init__(self, misconception: Misconception, **details: Any):
        self.misconception = misconception
        self.details = details
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return _fill(self.misconception.message, self.details)

    @property
    def hint(self) -> str:
        return _fill(self.misconception.hint, self.details)


def _fill(text: str, details: dict[str, Any]) -> str:
    try:
        return text.format(**details)
    except (KeyError, IndexError, ValueError):
        return text


# --------------------------------------------------------------------------- checks

Inputs = dict[str, Any]
Outputs = dict[str, Any]


@dataclass(frozen=True)
class Check:
    """One graded check = inputs + probe + verdict.

    inputs(gen, device) -> Inputs      deterministic from the generator's seed
    probe(module, inputs) -> Outputs   runs the student's code; returns plain tensors/values
    verdict(got, want, inputs) -> None raises Failure; `want` is probe(solution, inputs),
                                       stored as a fixture (public tier) or computed from
                                       solutions/ at grading time (hidden tier)
    """

    module: str
    slug: str
    title: str
    points: float
    inputs: Callable[..., Inputs]
    probe: Callable[[Any, Inputs], Outputs]
    verdict: Callable[[Outputs, Outputs, Inputs], None]
    exercise: str = ""  # the function or class it grades, named in "not attempted"
    timeout: float = 20.0
    # A slow check (a training run) runs only when asked for (`make grade-train`), and has
    # no stored reference: its verdict judges against thresholds, since a training run's
    # floats are not bitwise reproducible across machines.
    slow: bool = False

    @property
    def id(self) -> str:
        return f"{self.module}.{self.slug}"

    @property
    def name(self) -> str:
        return f"{self.module}: {self.title}"

    def seed(self, base_seed: int) -> int:
        """Each check draws its inputs from its own seed, so adding a check moves no other."""
        return zlib.crc32(f"{base_seed}:{self.id}".encode())


@dataclass
class Result:
    check_id: str
    name: str
    module: str
    points: float
    score: float
    status: str  # "passed" | "failed" | "not attempted" | "timed out" | "error"
    misconception: str = ""
    message: str = ""
    hint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @classmethod
    def of(cls, check: Check, status: str, failure: Failure | None = None) -> Result:
        return cls(
            check_id=check.id,
            name=check.name,
            module=check.module,
            points=check.points,
            score=check.points if status == "passed" else 0.0,
            status=status,
            misconception=failure.misconception.id if failure else "",
            message=failure.message if failure else "",
            hint=failure.hint if failure else "",
        )
