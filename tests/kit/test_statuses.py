"""What each channel shows for a check that costs nothing (NOTE), for a module file that is
not there (TODO, missing-file), and where the tip under the table sends the student."""

from __future__ import annotations

import pytest
from conftest import KIT, SOLUTIONS, submission_with

from autograder import notebook
from autograder.channels import class_report
from autograder.core import check as core
from autograder.core import i18n, registry
from autograder.core.check import Result
from autograder.core.references import References
from autograder.feedback import report, report_html, sinks
from autograder.run import engine
from autograder.run.sandbox.runner import Graded
from autograder.run.submission import Submission


def _result(module, slug, status, points=1.0, misconception="", message="") -> Result:
    """A Result as the engine makes it (score from the status)."""
    failure = None
    if misconception:
        failure = core.Failure(core.Misconception(misconception, message or "something is off"))
    check = core.ProbeSpec(f"{module}.{slug}", module, slug, "", str, str)
    r = Result.of(check, status, failure)
    r.name, r.points = f"{module}: {slug}", points
    r.score = points if r.passed else 0.0
    return r


# --------------------------------------------------------------------------- NOTE


@pytest.fixture(scope="module")
def looped(tmp_path_factory):
    """multihead with a Python loop over the heads: right values, so every check passes but
    the 0-point advice check `vectorised`."""
    source = (KIT / "mutants" / "multihead" / "loop_over_heads.py").read_text()
    folder = submission_with(tmp_path_factory.mktemp("looped"), {"multihead": source})
    submission = Submission(folder)
    probed: dict = {}
    results = engine.grade_module(
        [c for c in registry.checks_of("multihead") if not c.slow],
        submission,
        References.public(),
        outputs=probed,
    )
    return submission, results, probed


def test_a_zero_point_check_that_does_not_pass_is_a_note_not_a_failure(looped):
    _, results, _ = looped
    (note,) = [r for r in results if not r.passed]
    assert note.check_id == "multihead.vectorised" and note.points == 0 and note.note
    assert note.status == "failed" and note.misconception == "mha-loop-over-heads"
    assert not any(r.note for r in results if r is not note)

    text = report.table(results, "T")
    row = next(line for line in text.splitlines() if "no Python loop over heads" in line)
    assert row.split()[:2] == ["NOTE", "0/0"], row
    assert "FAIL" not in text and "[mha-loop-over-heads]" in text  # the advice is still shown
    assert "(all checks passed, 1 advice note)" in text
    assert "to fix" not in text and "Tip:" not in text

    data = report.gradescope(results)
    (test,) = [t for t in data["tests"] if t["name"] == note.name]
    assert test["score"] == test["max_score"] == 0
    assert test["status"] == "passed"  # 0 of 0 points: nothing lost
    assert test["output"].startswith("[note] [mha-loop-over-heads] ")
    assert test["tags"] == ["mha-loop-over-heads"]
    assert data["score"] == data["max_score"]


def test_the_html_report_shows_the_note_in_its_own_colour(looped):
    submission, results, probed = looped
    section = report_html.sections(results, submission, probed=probed)["multihead"]
    row = next(r for r in section.split("<tr ") if "no Python loop over heads" in r)
    assert row.startswith('class="note"') and '<td class="tag">NOTE</td>' in row
    assert "[mha-loop-over-heads]" in row
    page = report_html.page(results, {"multihead": section}, "T")
    assert "all passed, 1 advice note" in page and "to fix" not in page


def test_the_class_report_keeps_a_notes_misconception_and_calls_it_a_note(looped):
    _, results, _ = looped
    rows = class_report._rows_of("alice", report.gradescope(results))
    (row,) = [r for r in rows if r.check.startswith("multihead: no Python loop")]
    assert row.status == "note" and row.misconception == "mha-loop-over-heads"
    data = class_report.ClassData("test", rows=rows, totals={"alice": {"multihead": 1.0}})
    assert ("multihead.MultiHeadAttention", "mha-loop-over-heads", 1, 1.0) in (
        class_report.misconceptions(data)
    )
    assert class_report.failed_checks(data) == []  # it lost no points


def test_every_sink_shows_the_note_alike_in_both_languages(looped):
    """feedback.txt (batch, Gradescope's stdout) and PrairieLearn, in English and in
    Chinese, and report.html in Chinese: the advice check is a NOTE worth 0 of 0, never a
    FAIL, and its advice is still shown."""
    submission, results, probed = looped
    (note,) = [r for r in results if r.note]
    result_set = sinks.ResultSet("alice", results, title="T")
    text = sinks.feedback_text(result_set)
    row = next(line for line in text.splitlines() if "no Python loop over heads" in line)
    assert row.split()[:2] == ["NOTE", "0/0"] and "FAIL" not in text, row
    assert "[mha-loop-over-heads]" in text and "1 advice note" in text

    data = sinks.prairielearn_data(result_set, "multihead")
    (test,) = [t for t in data["tests"] if t["name"] == note.name]
    assert test["points"] == test["max_points"] == 0 and data["score"] == 1.0
    assert test["message"].startswith("[mha-loop-over-heads] ")

    i18n.use("zh_CN")
    try:
        text = sinks.feedback_text(result_set)
        section = report_html.sections(results, submission, probed=probed)["multihead"]
    finally:
        i18n.use(None)
    row = next(line for line in text.splitlines() if "mha-loop" not in line and "0/0" in line)
    assert row.split()[:2] == ["建议", "0/0"] and "失败" not in text, row
    html_row = next(r for r in section.split("<tr ") if 'class="note"' in r)
    assert '<td class="tag">建议</td>' in html_row and "失败" not in section


def test_a_note_in_a_notebook_prints_the_advice_and_does_not_fail_the_cell(monkeypatch, capsys):
    note = _result("multihead", "vectorised", "failed", 0.0, "mha-loop-over-heads", "a loop")
    monkeypatch.setattr(notebook, "run", lambda *a, **k: note)
    notebook.grade("multihead.vectorised", {"MultiHeadAttention": object})
    out = capsys.readouterr().out
    assert out.startswith("NOTE  multihead: vectorised: 0 / 0 points") and "a loop" in out
    failed = _result("multihead", "vectorised", "failed", 1.0, "mha-loop-over-heads", "a loop")
    monkeypatch.setattr(notebook, "run", lambda *a, **k: failed)
    with pytest.raises(notebook.CheckFailed, match="failed"):
        notebook.grade("multihead.vectorised", {"MultiHeadAttention": object})


def test_notes_in_chinese():
    note = _result("multihead", "vectorised", "failed", 0.0, "mha-loop-over-heads")
    i18n.use("zh_CN")
    try:
        text = report.table([note, _result("attention", "x", "passed")], "T")
    finally:
        i18n.use(None)
    assert "建议  0/0" in text and "1 条建议" in text and "失败" not in text


# --------------------------------------------------------------------------- missing file


@pytest.fixture(scope="module")
def without_masks(tmp_path_factory):
    """solutions/ without masks.py, graded on attention and masks."""
    folder = submission_with(tmp_path_factory.mktemp("nomasks"))
    (folder / "masks.py").unlink()
    submission = Submission(folder)
    probed: dict = {}
    refs = References.public()
    results = []
    for module in ("attention", "masks"):
        checks = [c for c in registry.checks_of(module) if not c.slow]
        results += engine.grade_module(checks, submission, refs, outputs=probed)
    return submission, results, probed


def test_a_missing_module_file_is_todo_with_what_to_create(without_masks):
    _, results, _ = without_masks
    masks = [r for r in results if r.module == "masks"]
    assert masks and all(r.status == "not attempted" and r.score == 0 for r in masks)
    assert {r.misconception for r in masks} == {"missing-file"}
    first = masks[0]
    assert first.message.startswith("submission/masks.py: the file is missing")
    assert "Create masks.py in submission/ with causal_mask in it" in first.message
    assert all(r.passed for r in results if r.module == "attention")

    text = report.table(results, "T")
    masks_rows = [line for line in text.splitlines() if line.startswith("  ") and "/" in line]
    assert "FAIL" not in text and "import-error" not in text and "SyntaxError" not in text
    assert any(line.split()[0] == "TODO" for line in masks_rows)
    assert "[missing-file] submission/masks.py: the file is missing" in text
    assert f"({len(masks)} checks not attempted)" in text and "to fix" not in text
    assert "Tip: work one module at a time, in this order: make grade EX=masks" in text

    data = report.gradescope(results)
    tests = [t for t in data["tests"] if t["name"].startswith("masks: ")]
    assert all(t["tags"] == ["missing-file"] and t["score"] == 0 for t in tests)
    assert all(t["output"].startswith("[not attempted] [missing-file] ") for t in tests)


def test_every_channel_counts_a_missing_file_as_not_handed_in(without_masks, tmp_path):
    submission, results, probed = without_masks
    section = report_html.sections(results, submission, probed=probed)["masks"]
    assert 'class="fail"' not in section and 'class="todo"' in section
    assert "placeholder" in section and "Not drawn" not in section
    assert "masks.py</a></td><td>0 / " in report_html.page(results, {}, "T")

    # batch's grades.csv: "missing", not 0
    graded = sinks.ResultSet.of_graded(Graded("bob", results=results))
    sinks.publish(graded, [sinks.GradesCsv(tmp_path / "grades.csv", ["attention", "masks"])])
    bob = (tmp_path / "grades.csv").read_text().splitlines()[1].split(",")
    assert bob[4] == "missing" and float(bob[3]) > 0

    # the class report: not a misconception, and the module counts as not handed in
    rows = class_report._rows_of("bob", report.gradescope(results))
    data = class_report.ClassData("test", rows=rows)
    assert class_report.misconceptions(data) == []
    assert class_report._missing_module([r for r in rows if r.module == "masks"])
    assert all(r.status == "not attempted" for r in rows if r.module == "masks")


def test_every_sink_says_which_file_to_create_in_both_languages(without_masks):
    """feedback.txt, PrairieLearn and report.html, in English and in Chinese: the missing
    module's checks are TODO, with the file to create, and the tip sends the student there."""
    submission, results, probed = without_masks
    masks = [r for r in results if r.module == "masks"]
    everything = sinks.ResultSet("bob", results, title="T")
    text = sinks.feedback_text(everything)
    assert sum(line.startswith("  TODO  ") for line in text.splitlines()) == len(masks)
    assert "FAIL" not in text and "import-error" not in text
    assert "Create masks.py in submission/" in text
    tip = "Tip: work one module at a time, in this order: make grade EX=masks"
    assert text.rstrip().endswith(tip)

    data = sinks.prairielearn_data(sinks.ResultSet("bob", masks, title="T"), "masks")
    assert data["score"] == 0 and all(
        t["message"].startswith("[missing-file] ") and "Create masks.py in" in t["message"]
        for t in data["tests"]
    )

    assert tip in report_html.page(results, {}, "T")

    i18n.use("zh_CN")
    try:
        text = sinks.feedback_text(everything)
        section = report_html.sections(results, submission, probed=probed)["masks"]
    finally:
        i18n.use(None)
    assert sum(line.startswith("  待做  ") for line in text.splitlines()) == len(masks)
    assert "创建 masks.py" in text and "失败" not in text
    assert 'class="todo"' in section and "创建 masks.py" in section


def test_a_broken_file_is_still_an_import_error(tmp_path):
    folder = submission_with(tmp_path, {"masks": "def causal_mask(:\n"})
    checks = [c for c in registry.checks_of("masks") if not c.slow][:2]
    results = engine.grade_module(checks, Submission(folder), References.public())
    assert all(r.status == "failed" and r.misconception == "import-error" for r in results)


# --------------------------------------------------------------------------- the tip


def test_the_tip_sends_the_student_to_the_first_failing_module_in_course_order():
    fail = _result("attention", "scale", "failed", 2.0, "no-scaling")
    todo = _result("masks", "causal", "not attempted", 1.0, "not-attempted")
    ok = _result("attention", "shape", "passed")
    # the tester's case: attention fails, masks is not begun: fix attention first
    text = report.table([ok, fail, todo], "T")
    assert text.splitlines()[-1] == (
        "Tip: fix attention.py first, one module at a time: make grade EX=attention"
    )
    # a failing module later in the course still comes before one not begun
    later = _result("multihead", "dropout", "timed out", 2.0, "timeout")
    text = report.table([ok, todo, later], "T")
    assert text.splitlines()[-1].startswith("Tip: fix multihead.py first")
    # in course order, whatever the order of the results
    text = report.table([later, fail], "T")
    assert "Tip: fix attention.py first" in text
    # every begun module passes: the first module not attempted
    other = _result("positional", "encoding", "not attempted", 1.0, "not-attempted")
    text = report.table([ok, other, todo], "T")
    assert text.splitlines()[-1] == (
        "Tip: work one module at a time, in this order: make grade EX=masks"
    )
    # a note is no reason to go back, nor is the grader's own error
    note = _result("attention", "vectorised", "failed", 0.0, "mha-loop-over-heads")
    error = _result("attention", "x", "error", 1.0, "grader-error")
    text = report.table([note, error, todo], "T")
    assert text.splitlines()[-1].endswith("make grade EX=masks")
    elsewhere = _result("multihead", "vectorised", "failed", 0.0, "mha-loop-over-heads")
    assert "Tip:" not in report.table([ok, elsewhere], "T")
    # report.html closes its summary with the same tip
    page = report_html.page([ok, fail, todo], {}, "T")
    assert '<p class="tip">Tip: fix attention.py first, one module at a time: ' in page
    assert "Tip:" not in report_html.page([ok, elsewhere], {}, "T")


def test_solutions_draw_no_notes(tmp_path):
    """solutions/ on the advice checks: none is a note (so `make grade` on it shows no NOTE)."""
    checks = [c for c in registry.all_checks() if c.forgeable and not c.slow]
    assert checks
    results = []
    for module in dict.fromkeys(c.module for c in checks):
        mine = [c for c in checks if c.module == module]
        results += engine.grade_module(mine, Submission(SOLUTIONS), References.public())
    assert all(r.passed for r in results), [(r.check_id, r.message) for r in results]
