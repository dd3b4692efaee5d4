"""Run one check: the probe runs student code (probing.py), the verdict judges it here."""

from __future__ import annotations

import traceback

from . import registry
from .core import GRADER_ERROR, Check, Failure, Inputs, Outputs, Result
from .probing import attempt, make_inputs
from .references import References
from .submission import Submission


def run_check(
    check: Check,
    submission: Submission,
    reference: Outputs | None,
    *,
    seed: int,
    device: str = "cpu",
) -> Result:
    """Grade one check in this process. Never raises for anything the student's code does."""
    inputs = make_inputs(check, seed)
    got = attempt(check, submission, inputs, device)
    if isinstance(got, Result):
        return got
    return judge(check, got, reference, inputs)


def judge(check: Check, got: Outputs, reference: Outputs | None, inputs: Inputs) -> Result:
    """The trusted side of a check: the verdict on the probe's outputs."""
    try:
        check.verdict(got, reference, inputs)
    except Failure as f:
        return Result.of(check, "failed", f)
    except Exception as e:
        result = Result.of(check, "error", Failure(GRADER_ERROR, error=f"{type(e).__name__}: {e}"))
        result.extra["traceback"] = traceback.format_exc()
        return result
    return Result.of(check, "passed")


def grade(
    submission: Submission,
    modules: list[str] | None = None,
    *,
    seed: int | None = None,
    device: str = "cpu",
    slow: bool = False,
) -> list[Result]:
    """Grade in this process, without pytest (kit tests; batch grading builds on it).

    Slow checks (core.Check.slow: a training run) are graded only with slow=True.

    With seed=None the public tier: stored reference outputs. With a seed: the hidden tier,
    reference outputs computed from solutions/ on inputs drawn from that seed.
    """
    refs = References.hidden(seed) if seed is not None else References.public()
    results = []
    for module in modules or registry.modules():
        for check in registry.checks_of(module):
            if check.slow and not slow:
                continue
            results.append(
                run_check(check, submission, refs.get(check), seed=refs.seed, device=device)
            )
    return results
