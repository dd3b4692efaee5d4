"""Unit tests of the engine's parts, with no grading run: `make test-fast`."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import SOLUTIONS, submission_with

from autograder import limits, report, syllabus
from autograder.core import Check, CheckList, Failure, Result, Status, ref_of
from autograder.sandbox import wire
from autograder.verdicts import WRONG_KIND, assert_close, close

pytestmark = pytest.mark.fast


def test_close_never_rounds_the_reference_to_the_students_dtype():
    want = torch.tensor([0.25, 0.75])
    assert not close(torch.tensor([True, True]), want)  # bool(0.25) would be True
    assert not close(torch.tensor([0, 1]), want)
    assert close(want.double(), want)  # floats of another width: compared as the reference
    assert close(torch.tensor([1, 2]), torch.tensor([1, 2]))
    with pytest.raises(Failure) as caught:
        assert_close(torch.tensor([True, False]), want, "the output")
    assert caught.value.misconception is WRONG_KIND
    assert "torch.bool" in caught.value.message and "floating" in caught.value.message


def test_status_is_an_enum_and_reads_as_text():
    assert Status("timed out") is Status.TIMED_OUT and f"{Status.PASSED}" == "passed"
    check = Check("attention", "x", "t", 1, lambda g: {}, lambda m, x: {}, lambda *a: None)
    assert Result.of(check, "passed").passed and Result.of(check, "failed").score == 0
    with pytest.raises(ValueError):
        Result.of(check, "great")


def test_checklist_keeps_order_and_refuses_duplicates():
    checks = CheckList("attention")

    @checks.check("b", "second", 1, inputs=dict, probe=dict)
    def verdict(got, want, x):
        pass

    checks.check("a", "third", 2, inputs=dict, probe=dict, verdict=verdict)
    assert [c.slug for c in checks] == ["b", "a"] and checks[1].verdict is verdict
    with pytest.raises(ValueError, match="declared twice"):
        checks.check("a", "again", 1, inputs=dict, probe=dict, verdict=verdict)


def test_probe_refs_name_only_probe_side_functions():
    from autograder.checks.attention import judge, probe

    assert ref_of(probe.sdpa) == "autograder.checks.attention.probe:sdpa"
    with pytest.raises(ValueError, match="not a probe-side function"):
        ref_of(judge.verdict_reference)
    spec = judge.CHECKS[0].spec()
    assert spec["probe"].startswith("autograder.checks.attention.probe:")


def test_report_grammar():
    check = Check("attention", "x", "a title", 1, dict, dict, lambda *a: None)
    one = report.table([Result.of(check, "failed", None)], "T")
    assert "(1 check to fix)" in one
    two = report.table([Result.of(check, "failed"), Result.of(check, "failed")], "T")
    assert "(2 checks to fix)" in two


def test_limits_are_cpu_seconds_with_overrides():
    check = Check("attention", "x", "t", 1, dict, dict, lambda *a: None, timeout=7.0)
    limits.configure()
    assert limits.cpu_limit(check) == 7.0
    limits.record_reference(check.id, 1.0)
    assert limits.cpu_limit(check) == max(7.0, limits.FACTOR)
    limits.configure(cpu=0.5)
    assert limits.cpu_limit(check) == 0.5
    with pytest.raises(ValueError, match="positive"):
        limits.configure(cpu=0)
    limits.configure()


def test_wire_split_keeps_partial_frames_and_flags_garbage():
    one = wire.frame({"type": "start", "check": "a.b"})
    two = wire.frame({"type": "done"})
    messages, rest, broken = wire.split(one + two[:5])
    assert [h["type"] for h, _ in messages] == ["start"] and rest == two[:5] and not broken
    messages, rest, broken = wire.split(one + b"garbage-bytes-here")
    assert len(messages) == 1 and rest == b"" and "not grader messages" in broken


def test_syllabus_numbers_the_groups():
    assert syllabus.group("attention") == 1 and syllabus.group(syllabus.MODULES[-1]) == len(
        syllabus.MODULES
    )


def test_bool_results_earn_nothing(tmp_path):
    """Returning bool tensors of the right shape computes nothing and wins no point."""
    source = """
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    L, S = q.size(-2), k.size(-2)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    return (torch.ones(*batch, L, v.size(-1), dtype=torch.bool),
            torch.ones(*batch, L, S, dtype=torch.bool))

def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
"""
    from autograder.engine import grade
    from autograder.submission import Submission

    folder = submission_with(tmp_path, {"attention": source})
    results = grade(Submission(folder), ["attention"])
    assert results and sum(r.score for r in results) == 0, [
        (r.check_id, r.message) for r in results if r.passed
    ]
    assert "grader-error" not in {r.misconception for r in results}


def test_worker_stops_an_overrunning_check_from_outside(tmp_path):
    """A check that uses up its CPU seconds is stopped by the parent; the others run."""
    source = (
        (SOLUTIONS / "masks.py")
        .read_text()
        .replace(
            "def padding_mask(lengths, S):\n",
            "def padding_mask(lengths, S):\n    while True:\n        pass\n",
            1,
        )
    )
    from autograder.engine import grade
    from autograder.submission import Submission

    folder = submission_with(tmp_path, {"masks": source})
    limits.configure(cpu=1.0)
    try:
        results = grade(Submission(folder), ["masks"])
    finally:
        limits.configure()
    timed_out = [r.check_id for r in results if r.status == Status.TIMED_OUT]
    assert timed_out == ["masks.padding"], [(r.check_id, r.status) for r in results]
    assert all(r.passed for r in results if r.check_id != "masks.padding")
    assert os.getpid()  # the grading process itself was never interrupted


@pytest.mark.fast
def test_prints_stay_with_their_check_however_the_pipe_is_read():
    """The worker's output is cut at CHECK_END, even when the parent reads late (the next
    check's prints already in the pipe) or a read splits the marker."""
    from autograder.worker import CHECK_END, OUTPUT_KEEP, _Segments

    stream = b"a1\na2\n" + CHECK_END + b"b1\n" + CHECK_END + b"c1 (stopped)"
    for cut in range(len(stream) + 1):
        seg = _Segments()
        seg.feed(stream[:cut])
        seg.feed(stream[cut:])
        assert bytes(seg.next_segment()) == b"a1\na2\n", cut
        assert bytes(seg.next_segment()) == b"b1\n", cut
        assert bytes(seg.rest()) == b"c1 (stopped)", cut
    seg = _Segments()
    seg.feed(b"x" * (10 * OUTPUT_KEEP) + CHECK_END + b"y")
    assert len(seg.next_segment()) == 2 * OUTPUT_KEEP and bytes(seg.rest()) == b"y"
    seg = _Segments()  # no CHECK_END (the student closed fd 1): what came since the last
    seg.feed(b"only")
    assert bytes(seg.next_segment()) == b"only" and bytes(seg.rest()) == b""


def test_skipped_checks_cpu_is_the_fixtures_figure_scaled_to_this_machine_never_down():
    """The hidden tier's reference servers skip the checks whose verdicts read no reference
    (Check.compares); their time limits are calibrated on the public fixtures' CPU seconds,
    scaled by how much slower this machine ran the checks it did run."""
    from autograder import fixtures

    stored = fixtures.manifest("efficient")["cpu_seconds"]
    ran = {"chunked": stored["chunked"], "linear": stored["linear"]}
    slower = {slug: 3 * seconds for slug, seconds in ran.items()}
    faster = {slug: seconds / 3 for slug, seconds in ran.items()}
    skipped = {"chunked-memory", "no-such-check"}
    want = stored["chunked-memory"]
    assert fixtures.estimated_cpu("efficient", slower, skipped) == {
        "chunked-memory": round(3 * want, 4)
    }
    assert fixtures.estimated_cpu("efficient", faster, skipped) == {"chunked-memory": want}
    assert fixtures.estimated_cpu("no-such-module", slower, skipped) == {}
