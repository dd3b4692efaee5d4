"""Time in the sandbox: as in local grading (worker.py), a check's CPU seconds are read from
/proc by the trusted monitor and an overrun is stopped from outside the process, so one
slow check costs that check only and the rest of the submission is still graded."""

from __future__ import annotations

import pytest
import torch
from conftest import KIT, SOLUTIONS, submission_with
from test_batch import sandbox_processes
from test_units import masks_slow_then_endless

from autograder.core import registry
from autograder.run.limits import TimeLimits
from autograder.run.sandbox import wire
from autograder.run.sandbox.jail import Limits
from autograder.run.sandbox.runner import Sandbox

ENDLESS_PADDING = (SOLUTIONS / "masks.py").read_text() + (
    "\n\ndef padding_mask(lengths, S):  # an endless loop in this function only\n"
    "    while True:\n"
    "        pass\n"
)


@pytest.mark.fast
def test_the_monitor_reads_headers_in_any_chunks_and_skips_blobs():
    stream = wire.frame({"type": "start", "check": "masks.causal"})
    stream += wire.frame({"type": "outputs", "check": "masks.causal"}, b"\x00" * 100_000)
    stream += wire.frame({"type": "done"})
    for size in (1, 7, 4096, len(stream)):
        headers = wire.Headers()
        found = [h for i in range(0, len(stream), size) for h in headers.feed(stream[i : i + size])]
        assert [h["type"] for h in found] == ["start", "outputs", "done"]
        assert not headers.buffer and not headers.broken
    headers = wire.Headers()
    assert headers.feed(b"not a grader message at all") == [] and headers.broken
    assert headers.feed(wire.frame({"type": "done"})) == []  # nothing after garbage


def test_an_endless_loop_in_the_sandbox_costs_that_check_only(tmp_path):
    folder = submission_with(tmp_path, {"masks": ENDLESS_PADDING})
    limits, time = Limits(timeout=120), TimeLimits(cap=2)  # 2 CPU-s a check
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with Sandbox(["masks"], public=True, limits=limits, time_limits=time, slots=1) as sb:
            # The grader judges on one torch thread while the loop runs (no idle intra-op
            # thread spinning on a core the sandboxed process needs), in every channel.
            assert torch.get_num_threads() == 1
            graded = sb.grade(folder, "loop")
        assert torch.get_num_threads() == 2  # and as before afterwards
    finally:
        torch.set_num_threads(threads)
    by_slug = {r.check_id.split(".", 1)[1]: r for r in graded.results}
    assert set(by_slug) == {c.slug for c in registry.checks_of("masks") if not c.slow}
    padding = [slug for slug in by_slug if slug.startswith("padding")]
    assert padding, "masks has no padding_mask check: choose another function here"
    for slug, result in by_slug.items():
        if slug in padding:
            assert result.status == "timed out" and result.misconception == "timeout", result
            assert "2 CPU seconds" in result.message
        else:  # checks after the stopped one ran in a fresh process: all pass
            assert result.passed, (slug, result.status, result.message)
    assert not any("killed" in note or "ended" in note for note in graded.notes), graded.notes
    assert not sandbox_processes()
    kept = [c.points for c in registry.checks_of("masks") if not c.slow and c.slug not in padding]
    assert graded.score == sum(kept)  # points, not computed floats


def test_an_endless_loop_in_the_sandbox_costs_one_limit_per_function(tmp_path):
    """As in local grading (test_units.py): a loop in causal_mask stops its first check only;
    causal_mask's later checks and the window's checks that call it are timed out "same as
    above" without running to the limit; the checks that do not call it are graded."""
    source = (SOLUTIONS / "masks.py").read_text()
    for old, new in (
        ("    return torch.ones(L, L", "    while True:\n        pass\n    return torch.ones(L, L"),
        (
            "    i = torch.arange(L, device=device)[:, None]",
            "    i = torch.arange(L, device=device)[:, None]\n    future = causal_mask(L, device)",
        ),
    ):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    folder = submission_with(tmp_path, {"masks": source})
    limits, time = Limits(timeout=120), TimeLimits(cap=2)  # 2 CPU-s a check
    with Sandbox(["masks"], public=True, limits=limits, time_limits=time, slots=1) as sandbox:
        graded = sandbox.grade(folder, "loop")
    results = {r.check_id: r for r in graded.results}
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    assert [i for i, r in results.items() if r.misconception == "timeout"] == ["masks.causal"]
    causal = [c.id for c in registry.checks_of("masks") if c.exercise == "causal_mask"]
    for check_id in [*causal[1:], "masks.window", "masks.window-device"]:
        result = results[check_id]
        assert result.status == "timed out" and result.score == 0, statuses
        assert result.misconception == "timeout-same-as-above", statuses
        assert result.details["function"] == "causal_mask", result.details
    assert results["masks.padding"].passed and results["masks.window-errors"].passed, statuses
    assert not sandbox_processes()


CLOCK_START = (KIT / "attacks" / "clock_start" / "masks.py").read_text()


@pytest.mark.parametrize(
    ("trick", "function", "prefix"),
    [("forge", "causal_mask", "causal"), ("drop", "sliding_window_mask", "window")],
)
def test_student_code_cannot_reset_or_stop_a_checks_clock(trick, function, prefix, tmp_path):
    """tests/kit/attacks/clock_start with one trick, burning in one function (1 CPU-s a
    check): each call burns 3.5 CPU-s while a thread writes the grader's "start" message for
    the running check five times a second (forge), or after the channel's send was replaced
    so that no start is sent again (drop: the window's checks come after the causal and
    padding ones, which pass, in the same process). The first restarted the check's clock,
    the second left every check after the process's first with none: that function's checks
    passed. Now they time out, and masks' other checks pass."""
    source = CLOCK_START.replace(
        'BURNING = ("causal_mask", "padding_mask", "sliding_window_mask")',
        f'BURNING = ("{function}",)',
    ).replace('TRICKS = ("forge", "drop")', f'TRICKS = ("{trick}",)')
    assert source.count(f'("{function}",)') == 1 and source.count(f'("{trick}",)') == 1
    folder = submission_with(tmp_path, {"masks": source})
    limits, time = Limits(timeout=120), TimeLimits(cap=1)
    with Sandbox(["masks"], public=True, limits=limits, time_limits=time, slots=1) as sandbox:
        graded = sandbox.grade(folder, trick)
    results = {r.check_id.split(".", 1)[1]: r for r in graded.results}
    statuses = {slug: (str(r.status), r.misconception) for slug, r in results.items()}
    burning = [slug for slug in results if slug.startswith(prefix)]
    assert len(burning) > 1 and all(results[s].status == "timed out" for s in burning), statuses
    assert all(r.passed for s, r in results.items() if s not in burning), statuses
    assert not sandbox_processes()


def test_in_the_sandbox_a_timeout_is_charged_to_the_call_that_did_not_return(tmp_path):
    """As in the worker (test_units.py), the monitor reading the board once the process was
    stopped (1 CPU-s a check): causal_mask, slow but returning, overruns the causal check
    and is not charged (its later checks run and pass); stopped inside one call of
    causal_mask through the window, it is charged: the window's later check is "same as
    above"."""
    folder = submission_with(tmp_path, {"masks": masks_slow_then_endless()})
    limits, time = Limits(timeout=120), TimeLimits(cap=1)  # 1 CPU-s a check
    with Sandbox(["masks"], public=True, limits=limits, time_limits=time, slots=1) as sandbox:
        graded = sandbox.grade(folder, "charged")
    results = {r.check_id: r for r in graded.results}
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    ran_to_the_limit = [i for i, r in results.items() if r.misconception == "timeout"]
    assert ran_to_the_limit == ["masks.causal", "masks.window"], statuses
    later = results["masks.window-device"]
    assert later.status == "timed out" and later.misconception == "timeout-same-as-above"
    assert later.details["function"] == "causal_mask", later.details
    passed = ["masks.causal-device", "masks.causal-invariance", "masks.padding"]
    assert all(results[i].passed for i in [*passed, "masks.window-errors"]), statuses
    assert not sandbox_processes()


def _followed(work: str, timeout: float, busy: int) -> tuple[dict, float]:
    """relay.follow over a process doing `work` ("compute S" CPU-seconds, or "sleep S"),
    with `busy` busy loops beside it on the same CPU: (the report, the wall seconds)."""
    import os
    import signal
    import time

    from autograder.run.sandbox import relay

    cpu = {min(os.sched_getaffinity(0))}
    loops = []
    for _ in range(busy):
        pid = os.fork()
        if pid == 0:
            os.sched_setaffinity(0, cpu)
            while True:
                pass
        loops.append(pid)
    source, sink = os.pipe()
    target, drain = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            os.close(source)
            os.sched_setaffinity(0, cpu)
            how, seconds = work.split()
            if how == "sleep":
                time.sleep(float(seconds))
            else:
                while time.process_time() < float(seconds):
                    pass
            os._exit(0)
        os.close(sink)
        started = time.monotonic()
        report = relay.follow(pid, source, target, {}, 30.0, timeout)
        wall = time.monotonic() - started
        os.waitpid(pid, 0)
    finally:
        for loop in loops:
            os.kill(loop, signal.SIGKILL)
            os.waitpid(loop, 0)
        os.close(drain)
    return report, wall


def test_the_submission_budget_leaves_out_the_time_spent_waiting_for_a_cpu():
    """A loaded machine costs no one a point (limits.py): the submission's budget counts the
    seconds its process ran or blocked, not those it waited for a CPU (relay.follow, from
    the kernel's run_delay). 0.6 CPU-s of work beside three busy loops on one CPU takes
    about 2.4 s of wall-clock time, within a 1.5 s budget; 1.6 CPU-s of work beside one
    busy loop, and a sleep, still use it up."""
    import os

    from autograder.run.limits import run_delay

    if run_delay(os.getpid()) is None:
        pytest.skip("this kernel keeps no scheduler statistics (/proc/<pid>/schedstat)")
    report, wall = _followed("compute 0.6", 1.5, busy=3)
    assert "timed_out" not in report and wall > 1.5, (report, wall)
    assert report["waited"] > 0.5, report
    report, wall = _followed("compute 1.6", 1.5, busy=1)
    assert report.get("timed_out") and report["waited"] > 0.3, (report, wall)
    report, wall = _followed("sleep 5", 1.0, busy=0)
    assert report.get("timed_out") and wall < 3.0, (report, wall)
