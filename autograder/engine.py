"""Run one check: the probe runs student code, the verdict judges it with trusted code."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import torch

from .core import (
    CRASH,
    GRADER_ERROR,
    IMPORT_ERROR,
    NOT_ATTEMPTED,
    Check,
    Failure,
    Inputs,
    Outputs,
    Result,
)
from .submission import ImportProblem, Submission


def make_inputs(check: Check, seed: int) -> Inputs:
    """The check's inputs, on the CPU, drawn from its own seed."""
    gen = torch.Generator().manual_seed(check.seed(seed))
    return check.inputs(gen)


def to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def run_probe(check: Check, module: Any, inputs: Inputs, device: str = "cpu") -> Outputs:
    """Run the probe on `device`; bring every tensor it returns back to the CPU, detached."""
    got = check.probe(module, to_device(inputs, device))
    # nn.Parameter and plain tensors come back as plain, detached CPU tensors; anything else
    # (including odd Tensor subclasses) is left for the verdict to reject by name.
    plain = (torch.Tensor, torch.nn.Parameter)
    return {k: (v.detach().cpu() if type(v) in plain else v) for k, v in (got or {}).items()}


def run_check(
    check: Check,
    submission: Submission,
    reference: Outputs | None,
    *,
    seed: int,
    device: str = "cpu",
) -> Result:
    """Grade one check. Never raises for anything the student's code does."""
    inputs = make_inputs(check, seed)
    got = attempt(check, submission, inputs, device)
    if isinstance(got, Result):
        return got
    return judge(check, got, reference, inputs)


def attempt(check: Check, submission: Submission, inputs: Inputs, device: str = "cpu"):
    """The student side of a check: import the module and run the probe on `inputs`.

    Returns the probe's outputs, or the Result of a check that ended there (import error,
    not attempted, crash, or a Failure the probe raised). Batch grading runs this in the
    sandboxed process and `judge` in the trusted parent.
    """
    try:
        module = submission.load(check.module)
    except ImportProblem as p:
        failure = Failure(
            IMPORT_ERROR,
            file=p.file,
            error=p.error,
            package=submission.path.name,
            module=p.module,
        )
        return Result.of(check, "failed", failure)

    try:
        got = run_probe(check, module, inputs, device)
    except NotImplementedError as e:
        if _raised_in(e, submission.path):
            exercise = check.exercise or str(e).split(":")[0] or check.module
            return Result.of(check, "not attempted", Failure(NOT_ATTEMPTED, exercise=exercise))
        return Result.of(check, "failed", _crash(e, submission.path))
    except Failure as f:
        return Result.of(check, "failed", f)
    except Exception as e:  # student code failed: a crash is the student's, never the grader's
        return Result.of(check, "failed", _crash(e, submission.path))
    return got


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


def _student_frames(e: BaseException, root: Path) -> list[traceback.FrameSummary]:
    frames = traceback.extract_tb(e.__traceback__)
    return [f for f in frames if Path(f.filename).resolve().is_relative_to(root)]


def _raised_in(e: BaseException, root: Path) -> bool:
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(root)


def _crash(e: BaseException, root: Path) -> Failure:
    frames = _student_frames(e, root)
    where = ""
    if frames:
        f = frames[-1]
        where = f"in {Path(f.filename).name}, line {f.lineno}: `{(f.line or '').strip()}`"
    message = str(e).strip().splitlines()
    error = f"{type(e).__name__}: {message[0] if message else ''}".rstrip(": ")
    return Failure(CRASH, error=error, where=where)


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
    from . import checks, fixtures

    results = []
    for module in modules or checks.modules():
        if seed is None:
            refs, base = fixtures.load(module), fixtures.PUBLIC_SEED
        else:
            refs, base = fixtures.compute(module, seed=seed), seed
        for check in checks.checks_of(module):
            if check.slow and not slow:
                continue
            results.append(
                run_check(check, submission, refs.get(check.slug), seed=base, device=device)
            )
    return results
