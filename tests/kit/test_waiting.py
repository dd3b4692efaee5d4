"""Checks that wait on an own dependency (autograder/run/waiting.py): where local grading runs the
student's own module for a dependency (the student copy has no stand-in for it) and that
module fails its own checks or is not written, the dependent's checks that did not pass are
WAIT, counted neither as won nor as lost; the table, results.json, the report, the hint
ladder, `make hint` and `make watch` say so. The kit itself (every stand-in) never waits.

The student copy is simulated in-process by hiding the stand-ins it leaves out
(submission.trusted_modules); test_dist.py grades the real copy."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SOLUTIONS

from autograder.core import check as core
from autograder.core import i18n
from autograder.core.check import Failure, Result, Status
from autograder.feedback import ladder, report, report_html
from autograder.run import engine, submission, waiting
from autograder.run.submission import Submission
from autograder.trusted import NOT_IN_STUDENT_COPY

pytestmark = pytest.mark.fast

IN_COPY = sorted(set(submission.trusted_modules()) - set(NOT_IN_STUDENT_COPY))


@pytest.fixture
def copy_like(monkeypatch):
    """Grading as in the student copy: only the stand-ins it ships."""
    monkeypatch.setattr(submission, "trusted_modules", lambda: IN_COPY)


@pytest.fixture
def folder(tmp_path):
    shutil.copytree(SOLUTIONS, tmp_path / "mine", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "mine"


class _Check:
    def __init__(self, module, slug, points=2.0):
        self.module, self.points = module, points
        self.id, self.name = f"{module}.{slug}", f"{module}: {slug} works"


def _r(module, slug, status="passed", points=2.0, **details) -> Result:
    if status == "passed":
        return Result.of(_Check(module, slug, points), "passed")
    mistake = core.NOT_ATTEMPTED if status == "not attempted" else core.WRONG_VALUES
    if status == "error":
        mistake = core.GRADER_ERROR
    if not details:
        details = {"what": "x", "err": 1.0, "index": 0, "got": 1.0, "want": 2.0, "exercise": "e"}
    return Result.of(_Check(module, slug, points), status, Failure(mistake, **details))


def _by_id(results):
    return {r.check_id: r for r in results}


# --------------------------------------------------------------------------- the decision


def test_the_kit_with_every_stand_in_holds_nothing(folder):
    results = [_r("blocks", "ffn", "failed"), _r("gpt", "logits", "failed")]
    assert waiting.closure(Submission(folder), "gpt") == []
    assert waiting.hold(results, Submission(folder), lambda ms: pytest.fail(str(ms))) == results


def test_failing_checks_wait_on_a_failing_own_dependency_and_passing_ones_stay(copy_like, folder):
    sub = Submission(folder)
    assert waiting.closure(sub, "gpt") == ["positional", "blocks"]
    results = [
        _r("positional", "pe"),
        _r("blocks", "ln"),
        _r("blocks", "ffn", "failed"),
        _r("gpt", "logits", "failed", points=3),
        _r("gpt", "slow", "timed out"),
        _r("gpt", "causal"),
        _r("gpt", "errs", "error"),  # the grader's own failure stays one
        _r("gpt", "todo", "not attempted", exercise="generate"),  # gpt's own TODO stays
        _r("gpt", "dep-todo", "not attempted", exercise="x", dependency="blocks"),
        _r("gpt", "pos-todo", "not attempted", exercise="x", dependency="positional"),
    ]
    held = _by_id(waiting.hold(results, sub))
    assert [r.check_id for r in waiting.hold(results, sub)] == [r.check_id for r in results]
    for slug in ("logits", "slow", "dep-todo"):
        r = held[f"gpt.{slug}"]
        assert r.status == Status.WAITING and r.score == 0 and r.points in (2, 3)
        assert waiting.on(r) == [("blocks.py", waiting.FAILING)]
        assert r.message == "waiting on blocks.py: fix its failing checks first"
        assert r.misconception == "" and r.extra["waiting"]["was"]["status"] != "waiting"
    assert held["gpt.logits"].extra["waiting"]["was"]["misconception"] == "wrong-values"
    # a check that ran into positional's NotImplementedError waits on positional only (its
    # own checks pass: the part gpt uses is not written)
    assert waiting.on(held["gpt.pos-todo"]) == [("positional.py", waiting.UNFINISHED)]
    assert held["gpt.causal"].passed
    assert held["gpt.errs"].status == Status.ERROR
    assert held["gpt.todo"].status == Status.NOT_ATTEMPTED
    assert held["blocks.ffn"].status == Status.FAILED  # charged in its own module
    assert held["blocks.ffn"].misconception == "wrong-values"


def test_a_dependency_not_written_or_not_finished_is_named_as_such(copy_like, folder):
    sub = Submission(folder)
    gpt = [_r("gpt", "logits", "failed")]
    todo = [_r("blocks", s, "not attempted", exercise="x") for s in ("ln", "ffn")]
    (r,) = [x for x in waiting.hold(todo + gpt, sub) if x.module == "gpt"]
    assert r.message == "waiting on blocks.py: it is not written yet"
    half = [_r("blocks", "ln"), todo[1]]
    (r,) = [x for x in waiting.hold(half + gpt, sub) if x.module == "gpt"]
    assert r.message == "waiting on blocks.py: some of its exercises are not written yet"
    # advice (0 points) and the grader's own errors say nothing about the dependency
    fine = [_r("blocks", "ln"), _r("blocks", "adv", "failed", points=0), _r("blocks", "e", "error")]
    assert waiting.hold(fine + gpt, sub)[-1].status == Status.FAILED


def test_dependencies_count_transitively_and_ungraded_ones_are_graded_to_decide(copy_like, folder):
    sub = Submission(folder)
    # gpt runs your blocks.py, which (in this submission) runs your rotary.py
    blocks = folder / "blocks.py"
    blocks.write_text(blocks.read_text() + "\nfrom .rotary import apply_rotary  # noqa\n")
    assert waiting.closure(sub, "gpt") == ["positional", "blocks", "rotary"]
    asked = []

    def grade(modules):
        asked.append(modules)
        return [_r("positional", "pe"), _r("blocks", "ok"), _r("rotary", "r", "failed")]

    held = waiting.hold([_r("gpt", "logits", "failed"), _r("gpt", "ok")], sub, grade)
    assert asked == [["positional", "blocks", "rotary"]]  # course order, once
    assert [r.module for r in held] == ["gpt", "gpt"]  # what was graded quietly is not shown
    assert waiting.on(held[0]) == [("rotary.py", waiting.FAILING)]
    assert held[1].passed
    # nothing to decide when every check passes: no dependency is graded
    assert waiting.hold([_r("gpt", "ok")], sub, lambda ms: pytest.fail(str(ms)))[0].passed


def test_a_dependency_whose_checks_only_wait_holds_nothing_itself(copy_like, folder):
    """blocks waits on positional: gpt waits on positional, the file to fix, not on blocks."""
    sub = Submission(folder)
    blocks = folder / "blocks.py"
    blocks.write_text(blocks.read_text() + "\nfrom .positional import PositionalEncoding  # noqa\n")
    results = [
        _r("positional", "pe", "failed"),
        _r("blocks", "block", "failed"),
        _r("gpt", "logits", "failed"),
    ]
    held = _by_id(waiting.hold(results, sub))
    assert waiting.on(held["blocks.block"]) == [("positional.py", waiting.FAILING)]
    assert waiting.on(held["gpt.logits"]) == [("positional.py", waiting.FAILING)]


# --------------------------------------------------------------------------- the outputs


def _held(copy_like_folder) -> list[Result]:
    results = [
        _r("blocks", "ffn", "failed"),
        _r("blocks", "ln"),
        _r("gpt", "logits", "failed", points=3),
        _r("gpt", "tied", "failed"),
        _r("gpt", "causal"),
    ]
    return waiting.hold(results, Submission(copy_like_folder))


def test_the_table_shows_wait_and_the_total_says_which_points_wait(copy_like, folder):
    results = _held(folder)
    text = report.table(results, "T")
    lines = text.splitlines()
    assert "  WAIT  0/3  logits works" in lines and "  WAIT  0/2  tied works" in lines
    # the reason under the first of a run of checks that wait for the same reason
    assert text.count("waiting on blocks.py: fix its failing checks first") == 1
    assert text.count("these checks cannot be judged") == 1  # once per module
    gpt = next(line for line in lines if line.startswith("gpt.py"))
    assert gpt.endswith("(5 waiting)  2 / 7") and len(gpt) == 92
    assert "Total: 4 / 11 points (1 check to fix; 5 points wait on blocks.py)" in lines
    # blocks not in the table (make grade EX=gpt): the command that shows it
    alone = report.table([r for r in results if r.module == "gpt"], "T")
    assert "`make grade EX=blocks` shows its checks." in alone
    assert "Total: 2 / 7 points (5 points wait on blocks.py)" in alone
    assert "`make grade EX=blocks`" not in text


def test_results_json_counts_a_waiting_check_neither_as_won_nor_as_lost(copy_like, folder):
    data = report.gradescope(_held(folder))
    tests = {t["name"]: t for t in data["tests"]}
    wait = tests["gpt: logits works"]
    assert wait["score"] == wait["max_score"] == 0 and wait["status"] == "failed"
    assert wait["tags"] == ["waiting"] and wait["output"].startswith("[waiting] waiting on")
    assert wait["extra_data"] == {"status": "waiting", "points": 3, "waiting_on": ["blocks.py"]}
    lost = [t["name"] for t in data["tests"] if t["score"] < t["max_score"]]
    assert lost == ["blocks: ffn works"]
    # the top level keeps every point in max_score, as the table's total does, and says why
    assert (data["score"], data["max_score"]) == (4, 11)
    assert data["extra_data"] == {"waiting_points": 5, "waiting_on": ["blocks.py"]}
    assert "5 points wait on blocks.py" in data["output"]
    json.dumps(data)
    assert "output" not in report.gradescope([_r("gpt", "ok")])


def test_the_report_shows_wait_rows_and_the_summary(copy_like, folder):
    results = _held(folder)
    html = report_html.section("gpt", [r for r in results if r.module == "gpt"], "")
    assert html.count('<tr class="wait"><td class="tag">WAIT</td>') == 2
    assert "(5 waiting) 2 / 7" in html and "cannot be judged" in html
    assert report_html._state([r for r in results if r.module == "gpt"]) == (
        "5 points wait on blocks.py"
    )
    page = report_html.page(results, {}, "T")
    assert "5 points wait on blocks.py: not judged yet" in page


def test_the_chinese_table_words_waiting(copy_like, folder, monkeypatch):
    monkeypatch.setattr(i18n, "_chosen", None)
    i18n.use("zh_CN")
    try:
        text = report.table(_held(folder), "T")
    finally:
        i18n.use("en")
    assert "等待  0/3" in text and "等待 blocks.py：先修好它未通过的检查" in text
    assert "5 分在等待 blocks.py" in text
    assert max(report.width_of(line) for line in text.splitlines()) <= 92


def test_a_waiting_check_does_not_climb_the_hint_ladder(copy_like, folder, tmp_path):
    state = tmp_path / "state.json"
    failed = _r("gpt", "logits", "failed")
    (folder / "gpt.py").write_text("one = 1\n")
    assert ladder.advance([failed], folder, state) == {"gpt.logits": 1}
    (folder / "gpt.py").write_text("two = 2\n")
    assert ladder.advance([failed], folder, state) == {"gpt.logits": 2}
    for n in range(3):  # edits while it waits: no attempt, no level
        (folder / "gpt.py").write_text(f"edit = {n}\n")
        held = waiting.waiting(failed, [("blocks.py", waiting.FAILING)])
        assert ladder.advance([held], folder, state) == {}
        assert ladder.first_failing(folder, ["gpt.logits"], state) is None
    (folder / "gpt.py").write_text("three = 3\n")
    assert ladder.advance([failed], folder, state) == {"gpt.logits": 3}
    assert ladder.first_failing(folder, ["gpt.logits"], state)[0] == "gpt.logits"


def test_make_hint_names_the_file_a_module_waits_on(copy_like, folder, monkeypatch, capsys):
    from autograder.channels import cli

    blocks = folder / "blocks.py"
    blocks.write_text(
        blocks.read_text().replace(
            'h = F.gelu(h) if self.activation == "gelu" else F.relu(h)', "h = F.relu(h)"
        )
    )
    assert cli.main(["hint", "--submission", str(folder), "--ex", "gpt"]) == 0
    out = capsys.readouterr().out
    assert "waiting on blocks.py: fix its failing checks first" in out
    assert "No hint for gpt.py now" in out and "`make hint EX=blocks`" in out
    assert cli.main(["hint", "--submission", str(folder), "--ex", "blocks"]) == 0
    assert "[ffn-wrong-activation]" in capsys.readouterr().out  # blocks itself is charged


def test_watch_grades_a_module_again_when_its_own_dependency_is_saved(copy_like, folder):
    from autograder.channels.watch import Watcher

    watcher = Watcher.__new__(Watcher)  # to_grade needs no warm state
    watcher.folder, watcher.modules = folder, ["attention", "gpt", "llama"]
    assert watcher.to_grade(["blocks"]) == ["gpt"]
    assert watcher.to_grade(["rotary", "attention"]) == ["attention", "llama"]
    assert watcher.to_grade(["efficient"]) == []


def test_engine_grading_in_a_copy_with_a_bug_in_blocks(copy_like, folder):
    """The engine end to end, in-process: gpt's checks that a bug in blocks.py breaks wait;
    with blocks fixed they pass; in the kit (every stand-in) gpt passes whatever blocks does."""
    sub = Submission(folder)
    good = (folder / "blocks.py").read_text()
    (folder / "blocks.py").write_text(
        good.replace('h = F.gelu(h) if self.activation == "gelu" else F.relu(h)', "h = F.relu(h)")
    )
    raw = engine.grade(sub, ["gpt"])
    held = waiting.hold(raw, sub, lambda ms: engine.grade(sub, ms))
    assert [r for r in raw if not r.passed]  # before: gpt charged for blocks' bug
    assert {r.status for r in held} == {Status.PASSED, Status.WAITING}
    assert sum(r.score for r in held) == sum(r.score for r in raw)
    (folder / "blocks.py").write_text(good)
    fixed = Submission(folder)
    assert all(r.passed for r in waiting.hold(engine.grade(fixed, ["gpt"]), fixed))
