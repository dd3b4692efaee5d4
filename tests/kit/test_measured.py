"""Efficiency measured from outside the student's process (issue 27, item 5).

efficient.linear-cost and efficient.chunked-memory carry points again: each runs the same call
at T and at 2T, each in a fresh process whose peak memory and CPU seconds the trusted parent
reads from the kernel (autograder/run/measure.py): the forked worker's parent (make grade),
the sandbox's monitor (batch, Gradescope, PrairieLearn, nbgrader autograde), a fork of the
kernel (the notebook's own feedback). The in-process recorders stay as 0-point advice.
What a hostile student could forge inside the process gains nothing; correct code written
differently keeps its points on a loaded machine (two busy loops beside it).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import KIT, SOLUTIONS, submission_with

from autograder.core import registry
from autograder.core.references import References
from autograder.run import engine, measure
from autograder.run.submission import Submission

MEASURED = [c for c in registry.checks_of("efficient") if c.measured]
ATTACK = KIT / "attacks" / "forge_measurement" / "efficient.py"
NAMED = {
    "efficient.linear-cost": "linear-peak-memory-quadratic",
    "efficient.chunked-memory": "chunked-peak-memory-quadratic",
}


def _with_efficient(tmp_path: Path, path: Path | None) -> Path:
    """solutions/ with `path`'s definitions after the solution's efficient.py (a variant)."""
    if path is None:
        return submission_with(tmp_path)
    source = (SOLUTIONS / "efficient.py").read_text() + "\n\n" + path.read_text()
    return submission_with(tmp_path, {"efficient": source})


def _grade(folder: Path):
    results = engine.grade_module(MEASURED, Submission(folder), References.public())
    return {r.check_id: r for r in results}


@pytest.fixture
def busy():
    """Two busy loops beside the grading (a loaded 2-core machine)."""
    loops = [
        subprocess.Popen(
            ["timeout", "120", "sh", "-c", "while :; do :; done"], start_new_session=True
        )
        for _ in range(2)
    ]
    yield
    # The whole group: killing `timeout` alone left its sh looping, orphaned, after the test.
    for loop in loops:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()


@pytest.mark.fast
def test_measured_checks_carry_points_and_what_is_measured_inside_stays_advice():
    checks = {c.slug: c for c in registry.checks_of("efficient")}
    for slug in ("linear-cost", "chunked-memory"):
        assert checks[slug].measured >= 2 and checks[slug].points > 0
        assert not checks[slug].forgeable
        inside = checks[f"{slug}-inside"]
        assert inside.forgeable and inside.points == 0 and not inside.measured
    part = checks["linear-cost"].parts()[1]
    assert part.id == "efficient.linear-cost#1" and part.seed(7) == checks["linear-cost"].seed(7)
    assert part.spec()["part"] == 1


@pytest.mark.fast
def test_what_the_child_says_under_measured_is_dropped_and_the_parent_s_measure_kept():
    check = MEASURED[0]
    child = {"c0": 1.0, "measured/peak_bytes": 0.0, "part1/measured/cpu_seconds": 0.0}
    got = measure.merge(check, [(child, {"peak_bytes": 5.0, "cpu_seconds": 0.5}), (child, None)])
    assert got["part0/measured/peak_bytes"] == 5.0 and got["part0/c0"] == 1.0
    assert "part1/measured/peak_bytes" not in got and "part1/measured/cpu_seconds" not in got
    assert got["part0/part1/measured/cpu_seconds"] == 0.0  # under its own part: ignored
    # A part the parent could not measure is the grader's error (no points), never a pass.
    verdict = engine.judge(check, got, References.public().get(check), engine.make_inputs(check, 1))
    assert verdict.status in ("error", "failed") and not verdict.passed


def test_correct_code_keeps_its_points_under_load_and_forging_gains_nothing(tmp_path, busy):
    """make grade's placement (the forked worker): the solution and the alternatives nearest
    the lines (a loop over positions in Python; float64 everywhere) pass beside two busy
    loops; the attack (quadratic code that patches resource, os.times, torch's statistics,
    the kit's measuring module and probes, and pads the run at T) loses both checks."""
    alternatives = KIT / "alternatives" / "efficient"
    for n, variant in enumerate(
        [None, alternatives / "recurrent_and_two_pass.py", alternatives / "float64_inside_loops.py"]
    ):
        found = _grade(_with_efficient(tmp_path / str(n), variant))
        for result in found.values():
            assert result.passed, (variant, result.check_id, result.message)
    found = _grade(_with_efficient(tmp_path / "attack", ATTACK))
    for check_id, mistake in NAMED.items():
        assert found[check_id].status == "failed" and found[check_id].misconception == mistake


def test_the_sandbox_monitor_measures_and_the_kernel_forks(tmp_path):
    """Official grading (the sandbox: its monitor measures each part's confined process) and
    the notebook kernel's own feedback (engine.run_check: a fork of the kernel)."""
    from autograder.run.limits import TimeLimits
    from autograder.run.sandbox.jail import Limits
    from autograder.run.sandbox.runner import Sandbox

    limits, time = Limits(timeout=300), TimeLimits()
    with Sandbox(["efficient"], public=True, limits=limits, time_limits=time, slots=1) as sandbox:
        sandbox.checks = list(MEASURED)
        solution = sandbox.grade(_with_efficient(tmp_path / "s", None), "solution")
        attack = sandbox.grade(_with_efficient(tmp_path / "a", ATTACK), "attack")
    assert [r.check_id for r in solution.results] == [c.id for c in MEASURED]
    assert all(r.passed for r in solution.results), [r.message for r in solution.results]
    for result in attack.results:
        assert result.status == "failed" and result.misconception == NAMED[result.check_id]
        assert "Measured from outside its process" in result.message
    check = next(c for c in MEASURED if c.slug == "linear-cost")
    refs = References.public()
    sub = Submission(_with_efficient(tmp_path / "k", None))
    assert engine.run_check(check, sub, refs.get(check), seed=refs.seed).passed
    sub = Submission(_with_efficient(tmp_path / "ka", ATTACK))
    assert (
        engine.run_check(check, sub, refs.get(check), seed=refs.seed).misconception
        == (NAMED[check.id])
    )
