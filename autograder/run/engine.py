"""The one judge loop: whatever placement ran the probe, its outcome becomes a Result here.

Three placements run a check's probe: in this process (the notebook kernel's own
feedback: `run_check`), in a forked worker (make grade: `grade_module`, worker.py) and in the
sandbox's confined process (official grading: sandbox/runner.py). Each hands `verdict` what
the probe gave (its outputs, or the Result of a check that ended before a verdict was
possible, settled by policy.py) and gets the Result from `judge`, the trusted side of a check.
"""

from __future__ import annotations

import traceback

from ..core import registry
from ..core.check import GRADER_ERROR, UNNAMED, Check, Failure, Inputs, Outputs, Result
from ..core.references import References
from ..core.settings import Settings
from ..core.verdicts import ModelUnavailable
from . import measure, worker
from .limits import SLOWER_NOTE, TimeLimits
from .probing import attempt, make_inputs, one_torch_thread
from .submission import Loadable, Submission


def run_check(
    check: Check,
    submission: Loadable,
    reference: Outputs | None,
    *,
    seed: int,
    device: str = "cpu",
) -> Result:
    """Grade one check in this process. Never raises for anything the student's code does.
    A measured check's parts run in forks of this process, measured from here (measure.py)."""
    inputs = make_inputs(check, seed)
    if check.measured:
        parts = [
            measure.in_fork(lambda p=part: attempt(p, submission, make_inputs(p, seed), device))
            for part in check.parts()
        ]
        return verdict(check, measure.merge(check, parts), reference, inputs)
    return verdict(check, attempt(check, submission, inputs, device), reference, inputs)


def verdict(
    check: Check, outcome: Result | Outputs, reference: Outputs | None, inputs: Inputs
) -> Result:
    """The Result of one check from its probe's outcome, in every placement: a Result already
    (import error, crash, timeout, a channel the child broke: never a pass) stays what it is;
    outputs are judged."""
    if isinstance(outcome, Result):
        return outcome
    return judge(check, outcome, reference, inputs)


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
    limits: TimeLimits | None = None,
) -> list[Result]:
    """Grade the checks of one module: probes in a forked worker (worker.py), verdicts here
    (`verdict`).
    `outputs`, when given, receives {check id: what the student's code returned} (the HTML
    report draws it: it never runs student code itself). `pool`: workers started ahead for
    several modules (make grade), else one worker for this module now. `limits`: the run's
    time limits (default: calibrated on `refs`). This process only judges (small tensors),
    often while the workers of the next modules run: on one torch thread, so that no idle
    intra-op thread spins on a core they need (a fresh `make grade`: 3.9-4.2 busy CPU-s
    before, 3.5-3.8 after)."""
    with one_torch_thread():
        return _grade_module(checks, submission, refs, device, outputs, pool, limits)


def _grade_module(
    checks: list[Check],
    submission: Submission,
    refs: References,
    device: str,
    outputs: dict[str, Outputs] | None,
    pool: worker.Pool | None,
    limits: TimeLimits | None,
) -> list[Result]:
    limits = limits or refs.time_limits()
    try:
        wanted = {c.slug: refs.get(c) for c in checks}
    except (OSError, ValueError) as e:
        failure = Failure(GRADER_ERROR, error=str(e))
        return [Result.of(c, "error", failure) for c in checks]
    if pool is not None:
        probed = pool.result(checks[0].module, checks)
    else:
        probed = worker.probe_module(checks, submission, refs.seed, device, limits=limits)
    results = []
    for check in checks:
        p = probed[check.id]
        outcome: Result | Outputs = p.result if p.result is not None else (p.outputs or {})
        inputs: Inputs = {}
        if not isinstance(outcome, Result):
            inputs = make_inputs(check, refs.seed)
            if outputs is not None:
                outputs[check.id] = outcome
        result = verdict(check, outcome, wanted[check.slug], inputs)
        if p.printed:
            result.extra["printed"] = p.printed
        ref = limits.reference_cpu(check)
        if result.passed and ref and p.cpu_seconds > SLOWER_NOTE * max(ref, 0.01):
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
    cpu_limit: float | None = None,
    settings: Settings | None = None,
) -> list[Result]:
    """Grade a submission (make grade's plugin, the kit's tests and make watch build on it).

    Slow checks (core.Check.slow: a training run) are graded only with slow=True.

    With seed=None the public tier: stored reference outputs. With a seed: the hidden tier,
    reference outputs computed from solutions/ on inputs drawn from that seed.
    `settings`: the run's (its time limits: limits.TimeLimits.of, as in every channel);
    `cpu_limit`: a fixed CPU limit per check over them (Settings.cpu_limit).
    """
    refs = References.hidden(seed) if seed is not None else References.public()
    settings = settings or Settings()
    if cpu_limit is not None:
        settings = settings.but(cpu_limit=cpu_limit)
    limits = refs.time_limits(settings)
    results = []
    for module in modules or registry.modules():
        checks = [c for c in registry.checks_of(module) if slow or not c.slow]
        results += grade_module(checks, submission, refs, device, limits=limits)
    return results
