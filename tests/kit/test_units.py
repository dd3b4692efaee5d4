"""Unit tests of the engine's parts, with no grading run: `make test-fast`."""

from __future__ import annotations

import os
import struct

import pytest
import torch
from conftest import SOLUTIONS, submission_with

from autograder.core import registry, syllabus
from autograder.core.check import Check, CheckList, Failure, Result, Status, ref_of
from autograder.core.verdicts import WRONG_KIND, assert_close, close, excerpt
from autograder.feedback import report
from autograder.run import limits
from autograder.run.sandbox import wire

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


def test_checklist_reads_titles_and_points_from_the_modules_data():
    """A judge names a check by its slug; checks.toml gives its title and points, and a slug
    with no table there is refused."""
    from autograder.core.check import declared_checks

    checks = CheckList("attention")
    verdict = checks.check("scale", inputs=dict, probe=dict, verdict=lambda *a: None)
    title, points = declared_checks("attention")["scale"]
    assert (checks[0].title, checks[0].points) == (title, points) and verdict is not None
    assert title and points > 0
    with pytest.raises(ValueError, match="has no table"):
        checks.check("no-such-check", inputs=dict, probe=dict, verdict=verdict)


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
    assert limits.TimeLimits().cpu_limit(check) == 7.0
    measured: dict[str, float] = {}  # References.cpu: filled as references load
    calibrated = limits.TimeLimits(reference=measured)
    measured[check.id] = 1.0
    assert calibrated.cpu_limit(check) == max(7.0, limits.FACTOR)
    assert calibrated.reference_cpu(check) == 1.0
    assert limits.TimeLimits(cpu=0.5, reference=measured).cpu_limit(check) == 0.5
    with pytest.raises(ValueError, match="positive"):
        limits.TimeLimits(cpu=0)
    with pytest.raises(ValueError, match="positive"):
        limits.TimeLimits(stall=0)
    # the references record the solution's CPU seconds of their own checks, and nothing else
    from autograder.core.references import References

    refs = References.public()
    refs.module("masks")
    assert refs.cpu and all(k.startswith("masks.") for k in refs.cpu)
    assert refs.time_limits().reference is refs.cpu
    assert References.public().cpu == {}  # another run's references start empty


def test_wire_split_keeps_partial_frames_and_flags_garbage():
    one = wire.frame({"type": "start", "check": "a.b"})
    two = wire.frame({"type": "done"})
    messages, rest, broken = wire.split(one + two[:5])
    assert [h["type"] for h, _ in messages] == ["start"] and rest == two[:5] and not broken
    messages, rest, broken = wire.split(one + b"garbage-bytes-here")
    assert len(messages) == 1 and rest == b"" and "not grader messages" in broken


@pytest.mark.timeout(60)
def test_wire_reads_a_header_of_unclosed_escaped_quotes_in_one_pass():
    """A child's header of `"` + `\\"` * n (1 MiB, never closed): the string scan before
    parsing was quadratic (about 80 minutes, the grader's judging frozen meanwhile); it
    is one pass, and the frame is refused as bad JSON (the timeout only guards the old bug)."""
    for tail in (b"", b"\\"):
        header = b'"' + b'\\"' * ((wire.MAX_HEADER - 2) // 2) + tail
        frame = wire.MAGIC + struct.pack("<II", len(header), 0) + header
        messages, rest, broken = wire.split(frame)
        assert messages == [] and rest == b"" and broken, (len(messages), broken)
        assert wire.Headers().feed(frame) == []


def test_wire_keeps_a_bounded_number_of_messages_from_a_flood():
    """64 MiB of 14-byte frames were 4.8 million messages: 21 s and about 1 GB of the parent's
    memory. A channel holds at most wire.MAX_MESSAGES; past them it is broken (the flooder's
    remaining checks are charged, nobody else's)."""
    frame = wire.frame({})
    flood = frame * (wire.MAX_MESSAGES + 5)
    messages, note = wire.parse(flood)
    assert len(messages) == wire.MAX_MESSAGES and str(wire.MAX_MESSAGES) in note
    headers = wire.Headers()
    assert len(headers.feed(flood)) == wire.MAX_MESSAGES and headers.broken


@pytest.mark.timeout(60)
def test_a_detail_built_to_backtrack_is_shown_as_it_is():
    """A forged result's detail of 4,000 characters built to make a four-placeholder phrase's
    pattern fail late took 9.6 s per call of i18n.phrase, holding the GIL (once per detail and
    sink: a batch of 31 froze for minutes). Values longer than PHRASE_MAX are not read against
    the patterns (the timeout only guards the old behaviour)."""
    from autograder.core import i18n

    head = "the values kept were multiplied by "
    seps = (", not 1 / (1 - p) = ", ", and ", " were dropped, not p = ")
    n = 4000 - len(head)
    counts = (
        int(n * 0.25 / len(seps[0])),
        int(n * 0.35 / len(seps[1])),
        int(n * 0.35 / len(seps[2])),
    )
    value = head + "".join(sep * count for sep, count in zip(seps, counts, strict=True))
    value += "x" * (4000 - len(value))
    catalog = i18n.translations("zh_CN")
    for _ in range(12):
        assert i18n.phrase(value, catalog) == value


def test_a_raised_message_is_read_whole_and_shown_as_its_start_and_end():
    from autograder.run.probing import MESSAGE_MAX, raised

    class ShapeError(ValueError):
        pass

    def fails(error):
        def call():
            raise error

        return call

    long = "why the call was refused, at length; " * 12 + "got k of shape (2, 3, 4, 6)"
    assert raised(fails(ShapeError(long)), "returned") == ("ValueError", long)  # a subclass
    assert raised(fails(TypeError("no")), "returned") == ("raised TypeError", "no")
    assert raised(lambda: None, "returned") == ("returned", "")
    assert len(raised(fails(ValueError("x" * 10**5)), "")[1]) == MESSAGE_MAX
    with pytest.raises(NotImplementedError):
        raised(fails(NotImplementedError()), "returned")
    shown = excerpt(long)
    assert len(shown) <= 303 and shown.endswith("(2, 3, 4, 6)") and " … " in shown
    assert shown.startswith("why the call") and excerpt("short") == "short"


def test_a_zip_made_on_windows_unpacks_and_unsafe_paths_stay_out(tmp_path):
    import zipfile

    from autograder.channels.batch import extract_zip

    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # a Windows tool's separators
        zf.writestr("mysub\\attention.py", "x = 1\n")
        zf.writestr("mysub\\..\\..\\evil.py", "")
        zf.writestr("C:\\evil.py", "")
        zf.writestr("\\evil.py", "")
    notes = extract_zip(archive, tmp_path / "out")
    assert (tmp_path / "out" / "mysub" / "attention.py").read_text() == "x = 1\n"
    assert sorted(p.name for p in tmp_path.rglob("evil.py")) == []
    assert len([n for n in notes if "unsafe path" in n]) == 3, notes


def test_of_two_folders_of_module_files_the_fuller_then_newer_is_graded_and_named(tmp_path):
    """An upload with `hw3/` and `hw3_old/` graded the first in alphabetical order, silently.
    Of folders as shallow, the one with the most module files is graded, then the one changed
    last, and a note names every other folder that holds module files."""
    from autograder.channels.batch import package_folder, with_notebooks

    def files(folder, names, when):
        folder.mkdir(parents=True)
        for name in names:
            (folder / name).write_text("x = 1\n")
            os.utime(folder / name, (when, when))

    up = tmp_path / "up"
    files(up / "a_old", ["attention.py"], 1_000)
    files(up / "hw3", ["attention.py", "masks.py"], 500)
    files(up / "hw3" / "backup", ["masks.py"], 2_000)
    files(up / "__MACOSX", ["attention.py", "masks.py", "gpt.py"], 3_000)
    assert package_folder(up) == up / "hw3"  # the most module files, not the first name
    folder, notes = with_notebooks(up, tmp_path / "nb")
    assert folder == up / "hw3"
    assert notes == [
        "a_old/ also holds module files (attention.py): not graded; hw3/ is",
        "hw3/backup/ also holds module files (masks.py): not graded; hw3/ is",
    ], notes
    files(tmp_path / "tie" / "b", ["attention.py"], 1_000)
    files(tmp_path / "tie" / "c", ["attention.py"], 2_000)
    files(tmp_path / "tie" / "d", ["attention.py"], 1_500)
    assert package_folder(tmp_path / "tie") == tmp_path / "tie" / "c"  # then the newest
    files(tmp_path / "top", ["masks.py"], 1_000)
    files(tmp_path / "top" / "deeper", ["attention.py", "masks.py", "gpt.py"], 2_000)
    assert package_folder(tmp_path / "top") == tmp_path / "top"  # the shallowest first
    assert package_folder(tmp_path / "nothing") == tmp_path / "nothing"


def test_an_import_error_names_the_modules_as_the_student_knows_them(tmp_path):
    """`from . import SCALE` (a name of the student's __init__.py, which grading does not run)
    was told "cannot import name 'SCALE' from '_attention_lab_submission_0' (unknown
    location)": the grader's own package name. It names the student's modules and says why."""
    from autograder.run.submission import ImportProblem, Submission, shown_names

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("SCALE = 1.0\n")
    (sub / "multihead.py").write_text("from . import SCALE\n")
    (sub / "gqa.py").write_text("from .attention import no_such_name\n")
    problems = {}
    for module in ("multihead", "gqa"):
        with pytest.raises(ImportProblem) as raised:
            Submission(sub).load(module)
        problems[module] = raised.value.error
    assert problems["multihead"] == (
        "ImportError: cannot import name 'SCALE' from your folder's package (grading does not "
        "run your __init__.py: define it in a module and import it from there)"
    ), problems
    assert problems["gqa"] == "ImportError: cannot import name 'no_such_name' from 'attention'"
    shown = shown_names("AttributeError: module '_attention_lab_submission_3.masks' has no x")
    assert shown == "AttributeError: module 'masks' has no x"


def test_a_file_saved_as_utf16_is_told_to_be_saved_as_utf8(tmp_path):
    from autograder.run.submission import Submission

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "attention.py").write_bytes("x = 1\n".encode("utf-16"))
    (sub / "masks.py").write_text("def f(:\n")
    problems = {}
    for module in ("attention", "masks"):
        try:
            Submission(sub).load(module)
        except Exception as e:  # ImportProblem
            problems[module] = str(e)
    assert "save it as UTF-8" in problems["attention"] and "line None" not in problems["attention"]
    assert "SyntaxError on line 1" in problems["masks"], problems


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
    from autograder.run.engine import grade
    from autograder.run.submission import Submission

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
    from autograder.run.engine import grade
    from autograder.run.submission import Submission

    folder = submission_with(tmp_path, {"masks": source})
    results = grade(Submission(folder), ["masks"], cpu_limit=1.0)
    timed_out = [r.check_id for r in results if r.status == Status.TIMED_OUT]
    assert timed_out == ["masks.padding"], [(r.check_id, r.status) for r in results]
    assert all(r.passed for r in results if r.check_id != "masks.padding")
    assert os.getpid()  # the grading process itself was never interrupted


# An endless loop at the top of causal_mask, and sliding_window_mask written on top of
# causal_mask (a student's right): the window's checks call causal_mask, padding's does not.
_LOOP_IN_CAUSAL = (
    "    return torch.ones(L, L",
    "    while True:\n        pass\n    return torch.ones(L, L",
)
_WINDOW_ON_CAUSAL = (
    "    i = torch.arange(L, device=device)[:, None]",
    "    i = torch.arange(L, device=device)[:, None]\n    future = causal_mask(L, device)",
)


def _masks_with(*edits: tuple[str, str]) -> str:
    source = (SOLUTIONS / "masks.py").read_text()
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def _grade_masks(tmp_path, source: str) -> dict[str, Result]:
    from autograder.run.engine import grade
    from autograder.run.submission import Submission

    folder = submission_with(tmp_path, {"masks": source})
    return {r.check_id: r for r in grade(Submission(folder), ["masks"], cpu_limit=1.0)}


def test_an_endless_loop_costs_one_limit_per_function(tmp_path):
    """A loop in causal_mask: its first check runs to the limit; its later checks are timed
    out "same as above" without running, and so are the checks of sliding_window_mask that
    call it (the guard ends them at once); padding_mask's check, and the window's check of
    bad windows (the ValueError comes before the call), are graded as usual."""
    source = _masks_with(_LOOP_IN_CAUSAL, _WINDOW_ON_CAUSAL)
    results = _grade_masks(tmp_path, source)
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    ran_to_the_limit = [i for i, r in results.items() if r.misconception == "timeout"]
    assert ran_to_the_limit == ["masks.causal"], statuses
    causal = [c.id for c in registry.checks_of("masks") if c.exercise == "causal_mask"]
    window = ["masks.window", "masks.window-device"]
    for check_id in causal[1:] + window:
        result = results[check_id]
        assert result.status == Status.TIMED_OUT and result.score == 0, statuses
        assert result.misconception == "timeout-same-as-above", statuses
        assert result.details["function"] == "causal_mask", result.details
        assert result.message.startswith("Same as above: causal_mask did not finish"), result
    assert results["masks.padding"].passed, statuses
    assert results["masks.window-errors"].passed, statuses


def test_a_guarded_function_cannot_be_caught_to_score(tmp_path):
    """Code that catches what the guard raises and answers otherwise still gets 0: the check
    called a function that did not finish (a loop in causal_mask, caught in the window)."""
    caught = "\n    try:\n        causal_mask(L, device)\n    except BaseException:\n        pass"
    source = _masks_with(_LOOP_IN_CAUSAL, (_WINDOW_ON_CAUSAL[0], _WINDOW_ON_CAUSAL[0] + caught))
    results = _grade_masks(tmp_path, source)
    window = ["masks.window", "masks.window-device"]
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    for check_id in window:
        assert results[check_id].status == Status.TIMED_OUT, statuses
        assert results[check_id].misconception == "timeout-same-as-above", statuses
    assert [i for i, r in results.items() if r.misconception == "timeout"] == ["masks.causal"]


def test_an_endless_loop_at_the_top_level_costs_one_limit(tmp_path):
    """A loop at the top level of masks.py: the first check runs to the limit, the others of
    the file are timed out "same as above" (every one imports the file)."""
    source = (SOLUTIONS / "masks.py").read_text() + "\nwhile True:\n    pass\n"
    results = _grade_masks(tmp_path, source)
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    first, *rest = (c.id for c in registry.checks_of("masks") if not c.slow)
    assert results[first].misconception == "timeout", statuses
    for check_id in rest:
        assert results[check_id].status == Status.TIMED_OUT, statuses
        assert results[check_id].misconception == "timeout-top-level-same-as-above", statuses
        assert results[check_id].details["file"] == "masks.py"


# causal_mask is slow but correct (0.3 CPU-s a call: the causal check's four calls overrun a
# 1 CPU-s limit, the later checks' one or two calls do not), and loops for good once
# sliding_window_mask has called it.
_CAUSAL_SLOW_THEN_ENDLESS = (
    "    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)",
    "    start = time.process_time()\n"
    "    while time.process_time() - start < 0.3 or _FROM_WINDOW:\n        pass\n"
    "    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)",
)
_WINDOW_CALLS_CAUSAL = (
    "    i = torch.arange(L, device=device)[:, None]",
    "    global _FROM_WINDOW\n    _FROM_WINDOW = True\n"
    "    i = torch.arange(L, device=device)[:, None]\n    future = causal_mask(L, device)",
)


def masks_slow_then_endless() -> str:
    """masks.py whose causal_mask is first slow, then endless (the test below;
    test_sandbox_time.py grades it in the sandbox)."""
    source = _masks_with(_CAUSAL_SLOW_THEN_ENDLESS, _WINDOW_CALLS_CAUSAL)
    return "import time\n\n_FROM_WINDOW = False\n" + source


def test_a_timeout_is_charged_to_the_call_that_did_not_return(tmp_path):
    """policy.charged in the worker (1 CPU-s a check).

    The causal check overruns with four calls of causal_mask that each return: slow, not
    endless, so nothing is charged and causal_mask's later checks run and pass, as they would
    without the rule. The window's first check is stopped inside one call of causal_mask,
    which the window made at its start: causal_mask is charged, not the window's declared
    exercise, so the window's later check is "same as above" for causal_mask, at once."""
    results = _grade_masks(tmp_path, masks_slow_then_endless())
    statuses = {i: (str(r.status), r.misconception) for i, r in results.items()}
    ran_to_the_limit = [i for i, r in results.items() if r.misconception == "timeout"]
    assert ran_to_the_limit == ["masks.causal", "masks.window"], statuses
    later = results["masks.window-device"]
    assert later.status == Status.TIMED_OUT and later.score == 0, statuses
    assert later.misconception == "timeout-same-as-above", statuses
    assert later.details["function"] == "causal_mask", later.details
    passed = ["masks.causal-device", "masks.causal-invariance", "masks.padding"]
    assert all(results[i].passed for i in [*passed, "masks.window-errors"]), statuses


@pytest.mark.fast
def test_the_board_says_which_tracked_function_runs_and_charged_reads_it():
    """probing.track: the functions behave as before (result, exception, signature, name);
    limits.Board: each tracked call running, with its entry's CPU time; policy.charged: the
    innermost call that ran for half the limit without returning, none when no call did
    (slow, not endless; stopped elsewhere), the declared exercise when the board cannot tell
    (no board, malformed, an exercise not tracked)."""
    import inspect
    import types

    from autograder.run.limits import Board
    from autograder.run.policy import charged
    from autograder.run.probing import track

    module = types.ModuleType("student")
    exec(
        "def f(x, y=2):\n    'doc'\n    return probe(x) + y\n"
        "def g(x):\n    return f(x) * 10\n"
        "def bad():\n    raise KeyError('k')\n"
        "class A:\n    def forward(self, x):\n        return g(x)\n",
        vars(module),
    )
    board = Board()
    seen: list[list[int]] = []
    module.probe = lambda x: seen.append(board.values()) or x
    slots = {("student", "f"): 0, ("student", "g"): 1, ("student", "A"): 2, ("student", "h"): 3}
    track(module, {name: slot for (_, name), slot in slots.items()}, board)
    board.mark()
    assert module.A().forward(1) == 30 and module.f(1, y=5) == 6
    assert module.f.__name__ == "f" and module.f.__doc__ == "doc"
    assert str(inspect.signature(module.f)) == "(x, y=2)"
    assert module.f.__globals__ is vars(module)  # a probe may look names up there
    with pytest.raises(KeyError):
        module.bad()
    n = Board.SLOTS
    inside = seen[0]  # A.forward -> g -> f -> probe: all three running, f innermost
    assert inside[0] > inside[1] > inside[2] > inside[2 * n] > 0
    assert inside[n] >= inside[n + 1] >= inside[n + 2] >= inside[2 * n + 1] > 0  # CPU ns
    assert board.values()[:4] == [-1, -1, -1, 0]  # tracked and idle; h is not in the module

    checks = {c.exercise: c for c in registry.checks_of("masks")}
    causal, window = checks["causal_mask"], checks["sliding_window_mask"]
    at = {("masks", "causal_mask"): 0, ("masks", "sliding_window_mask"): 1}
    second = 10**9

    def said(window_call=None, causal_call=None, tracked=True):
        """The board's values: the check started (stamp 5) at 1 s of CPU; each call (stamp,
        CPU ns at its entry) or None (tracked, not running)."""
        values = [0] * Board.SIZE
        for slot, call in ((1, window_call), (0, causal_call)):
            values[slot], values[n + slot] = call or (-1 if tracked else 0, 0)
        values[2 * n], values[2 * n + 1] = 5, 1 * second
        return values

    limit = 2.0  # CPU seconds: a call entered after 1 s of the check ran less than half
    # a loop inside causal_mask, which the window called at the check's start
    assert charged(window, said((6, second), (7, second)), at, limit) == "causal_mask"
    # a loop in the window that calls a sound causal_mask again and again: the window's
    assert charged(window, said((6, second), (9, 2 * second + 1)), at, limit) == (
        "sliding_window_mask"
    )
    # the window called again and again, each call returning (slow, not endless): none
    assert charged(window, said((9, 2 * second + 1)), at, limit) == ""
    assert charged(window, said(), at, limit) == ""  # stopped outside every call
    assert charged(window, said((4, second)), at, limit) == ""  # a call from a past check
    # the board cannot tell: as declared
    assert charged(window, None, at, limit) == "sliding_window_mask"
    assert charged(window, said(tracked=False), at, limit) == "sliding_window_mask"
    assert charged(causal, ["7", *said()[1:]], at, limit) == "causal_mask"  # malformed
    assert charged(causal, said()[:-1], at, limit) == "causal_mask"  # malformed
    board.close()


@pytest.mark.fast
def test_guard_ends_exactly_the_functions_named():
    """probing.guard: a function, a class's methods, "Class.method"; a name it cannot pin to
    one function (missing, a bare method name) is left alone, and so is everything else."""
    import types

    from autograder.run.probing import StuckCall, guard

    module = types.ModuleType("student")
    exec(
        "def f(): return 1\n"
        "def g(): return f()\n"
        "class A:\n    def forward(self): return 2\n"
        "class B:\n    def forward(self): return 3\n    def other(self): return 4\n"
        "class C:\n    def forward(self): return 5\n",
        vars(module),
    )
    fired: list[str] = []
    guard(module, ["f", "A", "B.forward", "forward", "missing"], fired.append)
    for call, name in (
        (module.g, "f"),
        (lambda: module.A().forward(), "A"),  # A() itself: object.__init__, not A's
        (lambda: module.B().forward(), "B.forward"),
    ):
        with pytest.raises(StuckCall):
            call()
        assert fired[-1] == name
    assert module.B().other() == 4 and module.C().forward() == 5 and len(fired) == 3


@pytest.mark.fast
def test_prints_stay_with_their_check_however_the_pipe_is_read():
    """The worker's output is cut at CHECK_END, even when the parent reads late (the next
    check's prints already in the pipe) or a read splits the marker."""
    from autograder.run.worker import CHECK_END, OUTPUT_KEEP, _Segments

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
    from autograder.core import fixtures

    stored = fixtures.manifest("efficient")["cpu_seconds"]
    ran = {"chunked": stored["chunked"], "linear": stored["linear"]}
    slower = {slug: 3 * seconds for slug, seconds in ran.items()}
    faster = {slug: seconds / 3 for slug, seconds in ran.items()}
    skipped = {"chunked-memory-inside", "no-such-check"}
    want = stored["chunked-memory-inside"]
    assert fixtures.estimated_cpu("efficient", slower, skipped) == {
        "chunked-memory-inside": round(3 * want, 4)
    }
    assert fixtures.estimated_cpu("efficient", faster, skipped) == {"chunked-memory-inside": want}
    assert fixtures.estimated_cpu("no-such-module", slower, skipped) == {}


def test_one_message_loop_settled_by_one_policy():
    """channel.probe_all (the child side of the worker and the sandbox) and channel.Reading
    with policy.outcome (their parents): a pass is never reported by the child, a malformed or
    unreadable outcome costs its check, a stray message only a note, a guard's word a timeout."""
    from autograder.run import channel, policy

    checks = [c for c in registry.checks_of("masks") if not c.slow][:3]
    sent: list[tuple[dict, bytes]] = []
    outcomes = iter([{"mask": torch.ones(2, 2, dtype=torch.bool)}, object(), None])

    def run(check, inputs):
        got = next(outcomes)
        return Result.of(check, "not attempted") if got is None else got

    channel.probe_all(
        checks, {c.id: {} for c in checks}, run, lambda m, blob=b"": sent.append((m, blob))
    )
    assert [m["type"] for m, _ in sent] == [
        *("start", "outputs", "start", "unencodable", "start", "result", "done")
    ]
    stream = b"".join(wire.frame(m, blob) for m, blob in sent)
    stream += wire.frame({"type": "result", "check": checks[0].id, "status": "passed"})
    stream += wire.frame({"type": "result", "check": "masks.nothing", "status": "passed"})
    stream += wire.frame({"type": "stuck", "check": checks[2].id, "function": "causal_mask"})
    reading = channel.Reading({c.id for c in checks})
    for header, blob in wire.parse(stream)[0]:
        reading.take(header, blob)
    assert reading.done and len(reading.stray) == 1  # the message for no check
    stuck = policy.Stuck()
    first, second, third = (policy.outcome(c, reading, stuck) for c in checks)
    assert torch.equal(first["mask"], torch.ones(2, 2, dtype=torch.bool))  # the first counts
    assert second.misconception == policy.CHANNEL.id and second.score == 0
    assert third.status == Status.NOT_ATTEMPTED and third.score == 0
    causal = next(c for c in registry.checks_of("masks") if c.exercise == "causal_mask")
    stuck.timed_out(causal)
    third = policy.outcome(checks[2], reading, stuck)
    assert third.status == Status.TIMED_OUT and third.misconception == policy.SAME_AS_ABOVE.id
    forged = {"type": "result", "check": checks[0].id, "status": "passed", "misconception": ""}
    forged |= {"message": "", "hint": ""}
    assert policy.child_result(checks[0], forged).status == Status.FAILED  # never a pass


def test_the_pre_fork_server_forks_follows_and_reaps():
    """forkserver.ForkServer, under the warm grader and the zygote: a child's exit status
    reaches on_exit, an exception in a child is exit status 1, `serve(idle)` ends once no
    child runs and nothing happened for `idle` seconds."""
    from autograder.run.forkserver import ForkServer

    server = ForkServer()
    ended: list[int] = []
    try:
        server.fork(lambda: 3, on_exit=lambda s: ended.append(os.waitstatus_to_exitcode(s)))
        server.fork(lambda: 1 / 0, on_exit=lambda s: ended.append(os.waitstatus_to_exitcode(s)))
        server.serve(idle=0.0)
    finally:
        server.close()
    assert sorted(ended) == [1, 3] and server.running() == []


def test_weights_that_cannot_be_loaded_are_named_from_the_students_side(tmp_path):
    """A MultiHeadAttention that always has biases (nn.Linear's default) cannot hold the
    grader's weights for bias=False: the checks that load them say which parameters differ
    (weights-not-loaded), not a crash whose hint is about shapes; the others keep their points."""
    source = (
        (SOLUTIONS / "multihead.py")
        .read_text()
        .replace("nn.Linear(d_model, d_model, bias=bias)", "nn.Linear(d_model, d_model)")
    )
    assert source != (SOLUTIONS / "multihead.py").read_text()
    from autograder.run.engine import grade
    from autograder.run.submission import Submission

    folder = submission_with(tmp_path, {"multihead": source})
    results = grade(Submission(folder), ["multihead"])
    failed = [r for r in results if not r.passed]
    assert failed and {r.misconception for r in failed} == {"weights-not-loaded"}, [
        (r.check_id, r.misconception) for r in failed
    ]
    message = failed[0].message
    assert '"w_q.bias"' in message and "which the stub does not create here" in message, message
    assert {"multihead.split", "multihead.merge"} <= {r.check_id for r in results if r.passed}


def test_a_shape_unpacked_into_fixed_names_is_named_and_no_other_unpack(tmp_path):
    """`B, H, T, d = x.shape` on a (T, d) input is shape-unpacked-fixed-rank; unpacking a
    function's result into too many names is an ordinary crash (its hint is about shapes of
    tensors, not of tuples, but nothing says the docstring allows it); a ValueError raised by
    a function the student's code called (a stand-in, torch) is call-refused."""
    from autograder.run.probing import crash

    source = tmp_path / "student.py"
    source.write_text(
        "def shape(x):\n"
        "    B, H, T, d = x.shape\n"
        "    return d\n"
        "def pair(f):\n"
        "    out, weights = f()\n"
        "    return out\n"
        "def window(mask, T, w):\n"
        "    return mask(T, w - 1)\n"
    )
    namespace: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)  # noqa: S102
    from autograder.trusted.masks import sliding_window_mask

    failures = []
    for call in (
        lambda: namespace["shape"](torch.zeros(3, 4)),
        lambda: namespace["pair"](tuple),
        lambda: namespace["window"](sliding_window_mask, 5, 1),  # a function called refuses
    ):
        try:
            call()
        except ValueError as e:
            failures.append(crash(e, tmp_path))
    ids = [f.misconception.id for f in failures]
    assert ids == ["shape-unpacked-fixed-rank", "crash", "call-refused"], ids
    assert "`B, H, T, d = x.shape`" in failures[0].message, failures[0].message
