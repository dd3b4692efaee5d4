"""Run one check: the probe runs student code (probing.py), the verdict judges it here."""

from __future__ import annotations

import traceback

from . import limits, registry, worker
from .core import GRADER_ERROR, UNNAMED, Check, Failure, Inputs, Outputs, Result
from .probing import attempt, make_inputs
from .references import References
from .submission import Loadable, Submission
from .verdicts import ModelUnavailable


def run_check(
    check: Check,
    submission: Loadable,
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
    except ModelUnavailable:  # the student copy: a verdict that needs a model to decide
        return Result.of(check, "failed", Failure(UNNAMED))
    except Exception as e:
        result = Result.of(check, "error", Failure(GRADER_ERROR, error=f"{type(e).__name__}: {e}"))
        result.extra["traceback"] = traceback.format_exc()
        return result
    return Result.of(check, "passed")


def grade_module(
    checks: list[Check],
    submission: Submission,
    refs: References,
    device: str = "cpu",
    outputs: dict[str, Outputs] | None = None,
    pool: worker.Pool | None = None,
) -> list[Result]:
    """Grade the checks of one module: probes in a forked worker (worker.py), verdicts here.
    `outputs`, when given, receives {check id: what the student's code returned} (the HTML
    report draws it: it never runs student code itself). `pool`: workers started ahead for
    several modules (make grade), else one worker for this module now."""
    try:
        wanted = {c.slug: refs.get(c) for c in checks}
    except (OSError, ValueError) as e:
        failure = Failure(GRADER_ERROR, error=str(e))
        return [Result.of(c, "error", failure) for c in checks]
    if pool is not None:
        probed = pool.result(checks[0].module, checks)
    else:
        probed = worker.probe_module(checks, submission, refs.seed, device)
    results = []
    for check in checks:
        p = probed[check.id]
        if p.result is not None:
            result = p.result
        else:
            got = p.outputs if p.outputs is not None else {}
            if outputs is not None:
                outputs[check.id] = got
            result = judge(check, got, wanted[check.slug], make_inputs(check, refs.seed))
        if p.printed:
            result.extra["printed"] = p.printed
        ref = limits.reference_cpu(check)
        if result.passed and ref and p.cpu_seconds > limits.SLOWER_NOTE * max(ref, 0.01):
            result.extra["note"] = (
                f"{p.cpu_seconds / max(ref, 0.01):.0f} times slower than the reference "
                f"({p.cpu_seconds:.2f} CPU-s): fine for grading, but look for a loop that "
                "could be one tensor operation."
            )
        results.append(result)
    return results


def grade(
    submission: Submission,
    modules: list[str] | None = None,
    *,
    seed: int | None = None,
    device: str = "cpu",
    slow: bool = False,
) -> list[Result]:
    """Grade a submission (make grade's plugin, the kit's tests and make watch build on it).

    Slow checks (core.Check.slow: a training run) are graded only with slow=True.

    With seed=None the public tier: stored reference outputs. With a seed: the hidden tier,
    reference outputs computed from solutions/ on inputs drawn from that seed.
    """
    refs = References.hidden(seed) if seed is not None else References.public()
    results = []
    for module in modules or registry.modules():
        checks = [c for c in registry.checks_of(module) if slow or not c.slow]
        results += grade_module(checks, submission, refs, device)
    return results
