"""The hint ladder: one level more per failing attempt of the same check with the same
misconception (state in build/hint-state.json), `make hint`, HINTS=all, and the levels each
channel without state shows (batch and Gradescope: 1 and 2; nbgrader: 1)."""

from __future__ import annotations

import json

import pytest
from conftest import SOLUTIONS, run_cli, submission_with

from autograder import notebook
from autograder.core import check as core
from autograder.core import i18n, settings
from autograder.core.check import Failure, Result
from autograder.feedback import ladder, report


class _Check:
    module, points = "masks", 1.0

    def __init__(self, slug="causal"):
        self.id, self.name = f"masks.{slug}", f"masks: {slug}"


def _failed(misconception=core.WRONG_SHAPE, slug="causal") -> Result:
    failure = Failure(misconception, what="the mask", got=(3, 3), expected=(4, 4), exercise="x")
    return Result.of(_Check(slug), "failed", failure)


def _passed(slug="causal") -> Result:
    return Result.of(_Check(slug), "passed")


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "masks.py").write_text("attempt = 1\n")
    return tmp_path / "sub"


def _edit(folder, n):
    (folder / "masks.py").write_text(f"attempt = {n}\n")


@pytest.mark.fast
def test_each_failing_attempt_on_changed_code_climbs_one_level_and_stays_at_three(folder, tmp_path):
    state = tmp_path / "state.json"
    seen = []
    for n in range(5):
        _edit(folder, n)
        seen.append(ladder.advance([_failed()], folder, state)["masks.causal"])
    assert seen == [1, 2, 3, 3, 3]


@pytest.mark.fast
def test_grading_unchanged_code_again_shows_the_same_level(folder, tmp_path):
    state = tmp_path / "state.json"
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 1
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 1
    _edit(folder, 2)
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 2
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 2


@pytest.mark.fast
def test_a_pass_or_another_misconception_starts_the_ladder_again(folder, tmp_path):
    state = tmp_path / "state.json"
    ladder.advance([_failed()], folder, state)
    _edit(folder, 2)
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 2
    _edit(folder, 3)
    assert ladder.advance([_failed(core.WRONG_DTYPE)], folder, state)["masks.causal"] == 1
    _edit(folder, 4)
    assert ladder.advance([_passed()], folder, state) == {}
    assert "masks.causal" not in ladder.load(state).get(ladder.key(folder), {})
    _edit(folder, 5)
    assert ladder.advance([_failed()], folder, state)["masks.causal"] == 1


@pytest.mark.fast
def test_checks_climb_their_own_ladders(folder, tmp_path):
    state = tmp_path / "state.json"
    ladder.advance([_failed(slug="a")], folder, state)
    _edit(folder, 2)
    levels = ladder.advance([_failed(slug="a"), _failed(slug="b")], folder, state)
    assert levels == {"masks.a": 2, "masks.b": 1}


@pytest.mark.fast
@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"version": 1, "submissions": 3}'])
def test_a_missing_or_corrupt_state_file_is_an_empty_state(folder, tmp_path, content):
    state = tmp_path / "state.json"
    if content:
        state.write_text(content)
    assert ladder.load(state) == {}
    assert ladder.advance([_failed()], folder, state) == {"masks.causal": 1}
    assert json.loads(state.read_text())["version"] == ladder.VERSION


@pytest.mark.fast
def test_hints_all_shows_every_level_and_no_state_shows_the_most_detailed():
    r = _failed()
    every = " ".join(report.table([r], "T", hints=ladder.ALL_LEVELS).split())
    for level, name in enumerate(core.HINT_LEVELS, 1):
        assert f"Hint {level}/3 ({name}):" in every
    one = " ".join(report.table([r], "T", hints={"masks.causal": 2}).split())
    assert "Hint 2/3 (the operation or API):" in one and "Hint 1/3" not in one
    plain = " ".join(report.table([r], "T").split())
    assert "Hint: " + core.WRONG_SHAPE.hints[2] in plain and "Hint 3/3" not in plain


@pytest.mark.fast
def test_a_one_string_hint_shows_at_every_level_as_level_3():
    old = core.Misconception("test-old-style", "{what} is off.", ("", "", "Do it right."))
    r = Result.of(_Check(), "failed", Failure(old, what="x"))
    assert old.level(1) == (3, "Do it right.") and old.level(3) == (3, "Do it right.")
    assert core.Misconception("test-none", "m").level(2) == (0, "")
    # not declared in this process: shown from the Result's own English, as it is
    assert i18n.hint_lines(r, (1,)) == i18n.hint_lines(r, None) == ["Hint: Do it right."]


@pytest.mark.fast
def test_stateless_channels_show_levels_1_and_2_and_notebooks_level_1():
    r = _failed()
    output = report.gradescope([r], hints=ladder.FRESH_LEVELS)["tests"][0]["output"]
    assert "Hint 1/3" in output and "Hint 2/3" in output and "Hint 3/3" not in output
    feedback = notebook.feedback(r)
    assert "Hint 1/3 (the idea):" in feedback and "Hint 2/3" not in feedback


def test_make_hint_climbs_the_ladder_of_the_first_failing_check(tmp_path, monkeypatch):
    folder = submission_with(tmp_path, {"masks": "def causal_mask(T:\n"})  # a syntax error
    state = tmp_path / "hint-state.json"
    monkeypatch.setenv(settings.HINT_STATE_VAR, str(state))

    def hint() -> str:
        proc = run_cli("hint", "--submission", str(folder), "--ex", "masks")
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    first = hint()  # no state yet: it grades masks first
    assert "Grading masks.py first" in first and "[import-error]" in first
    assert "Hint 1/3 (the idea):" in first
    assert "Hint 2/3 (the operation or API):" in hint()
    third = hint()
    assert "Hint 3/3 (nearly the code):" in third and "the last level" in third
    assert "Hint 3/3" in hint()
    # make grade on the unchanged file shows the level make hint reached
    results = tmp_path / "results.json"
    args = ("grade", "--submission", str(folder), "--ex", "masks", "--results", str(results))
    graded = run_cli(*args)
    assert "Hint 3/3 (nearly the code):" in graded.stdout and "Hint 1/3" not in graded.stdout
    # HINTS=all: every level
    every = run_cli(*args, "--hints", "all").stdout
    assert all(f"Hint {n}/3" in every for n in (1, 2, 3))
    # fixed: the ladder is cleared, and make hint says there is nothing to hint
    (folder / "masks.py").write_text((SOLUTIONS / "masks.py").read_text())
    run_cli(*args)
    assert ladder.load(state).get(ladder.key(folder), {}) == {}
    assert "no hint needed" in hint()
