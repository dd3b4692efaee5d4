"""nbgrader delivery: the course notebooks and one whole cycle, with nbgrader itself.

One course directory and one fresh sqlite gradebook for the module: course -> release ->
collect -> autograde (the hidden tier judged outside the kernel) -> feedback -> export, on the
attention and masks assignments (the Makefile's targets call the same functions), for five
students, with the names learning platforms give downloads:

    alice  submits the source notebooks (the solutions)             full marks
    bob    submits the released notebooks untouched                 zero
    carol  (one .zip) a classic bug in attention; a masks answer    partial credit, the bug's
           that is correct but makes PyTorch write a warning,       message in the feedback;
           renamed carol_masks_final.ipynb                          masks: full marks
    dave   deleted a test cell and duplicated a solution cell       graded sensibly; late
           (attention, LATE_dave_attention-1.ipynb, after an        (penalty per day); the
           earlier dave_attention.ipynb); deleted the               earlier file superseded
           padding_mask cell (masks)
    eve    patches autograder.notebook.grade in a solution cell     zero: judged outside
           and writes nothing else (attention)                      her kernel
    frank  correct (masks), with what real notebooks hold: a        full marks: the official
           self-check copied from a test cell, magics, a plot,      grade reads the release's
           prints, a cell that raises, a scratch copy of an         own cells; one checksum
           exercise, a helper in a cell of its own; retagged and    warning, for the test
           untagged solution cells; one test cell edited            cell he edited
"""

from __future__ import annotations

import ast
import copy
import csv
import datetime as dt
import html
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import KIT, ROOT, SOLUTIONS, grade_cli, grade_folder, run_cli, submission_with

from autograder import notebook
from autograder.channels.nbgrader import autograde as course_judge
from autograder.channels.nbgrader import course
from autograder.channels.nbgrader import export as course_export
from autograder.checks.attention.judge import MISTAKES
from autograder.core import course_config, fixtures, registry
from autograder.core.check import Result
from autograder.core.references import References
from autograder.feedback import sinks

NO_SCALING = MISTAKES["no-scaling"]  # the misconception the cycle's mutant makes
MODULES = ["attention", "masks"]  # the full cycle runs on these; every module's notebook runs
MUTANT = KIT / "mutants" / "attention" / "no_scaling.py"
SEED = "424242"
DUE = dt.datetime(2026, 10, 1, 23, 59, tzinfo=dt.UTC)
ON_TIME, EARLY = DUE - dt.timedelta(hours=3), DUE - dt.timedelta(days=2)
LATE = DUE + dt.timedelta(days=1, hours=12)  # two started days late
PATCH_GRADE = "import autograder.notebook as _n\n_n.grade = lambda *a, **k: None\n"


class Cycle(tuple):
    """(root, scores) as before, plus the export's rows, the collect items, the summary."""

    def __new__(cls, root, scores, rows, collected, summary):
        self = super().__new__(cls, (root, scores))
        self.rows, self.collected, self.summary = rows, collected, summary
        return self


# --------------------------------------------------------------------------- helpers


def read(path: Path):
    return nbformat.read(path, as_version=4)


def cell(nb, grade_id: str):
    found = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert len(found) == 1, f"{grade_id}: {len(found)} cells"
    return found[0]


def function_source(path: Path, name: str) -> str:
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise AssertionError(f"{path} has no function {name}")


def answered(root: Path, module: str, replace: dict[str, str] | None = None):
    """The released notebook with every solution cell filled in from the source notebook,
    then the cells in `replace` ({grade_id: source}) replaced: what a student hands in."""
    release = read(root / "release" / module / f"{module}.ipynb")
    source = read(root / "source" / module / f"{module}.ipynb")
    for c in release.cells:
        meta = c.metadata.get("nbgrader", {})
        if meta.get("solution"):
            c.source = (replace or {}).get(meta["grade_id"], cell(source, meta["grade_id"]).source)
    return release


def text_of_html(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def outputs_text(nb) -> str:
    parts = []
    for c in nb.cells:
        for out in c.get("outputs", []):
            parts.append(out.get("text", "") + out.get("evalue", ""))
    return "\n".join(parts)


SELF_CHECK = 'from autograder.notebook import grade\n\ngrade("masks.causal", globals())'
EDITED_TEST = "test-window"  # the locked cell frank edits: nbgrader must say so, once


def frank_notebook(root: Path):
    """masks, correct, as real students hand it in (the bug report: a copied self-check cell
    once cost 0/21 officially, '[import-error] No module named autograder.notebook')."""
    padding = cell(read(root / "source" / "masks" / "masks.ipynb"), "padding_mask").source
    helped = padding.replace(
        "    lengths = torch.as_tensor(lengths)\n", "    lengths = _as_lengths(lengths)\n"
    )
    assert helped != padding
    nb = answered(root, "masks", {"padding_mask": helped})
    causal, padding_cell = cell(nb, "causal_mask"), cell(nb, "padding_mask")
    del causal.metadata["nbgrader"]  # untagged by hand: an ordinary cell to nbgrader
    padding_cell.metadata["nbgrader"]["grade_id"] = "my-padding"  # retagged
    causal.source += "\n\nprint(causal_mask(3))\n" + SELF_CHECK  # a self-check, in place
    scratch = [
        SELF_CHECK,  # copied from a test cell, as a new cell
        "%time m = causal_mask(4)\n!pip --version\nprint(m)",
        "import matplotlib\n\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\n"
        "plt.imshow(causal_mask(5))\nplt.show()",
        "print(causal_mask(2))\n1 / 0  # a cell that raises",
        "def causal_mask(L, device=None):  # a scratch copy, never the graded one\n    return None",
    ]
    at = nb.cells.index(causal) + 1
    for i, text in enumerate(scratch):
        new = nbformat.v4.new_code_cell(text)
        new.id = f"scratch-{i}"
        nb.cells.insert(at + i, new)
    helper = nbformat.v4.new_code_cell(
        "def _as_lengths(lengths):  # a helper in a cell of its own\n"
        "    return torch.as_tensor(lengths)"
    )
    helper.id = "helper"
    nb.cells.insert(nb.cells.index(padding_cell), helper)
    cell(nb, EDITED_TEST).source = 'print("PASS")'  # tampering with a locked test cell
    return nb


# --------------------------------------------------------------------------- the cycle


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    course.write_course(root, MODULES)
    course.release(root)

    # Carol: forgets the 1/√d_k; her padding_mask copies a tensor with torch.tensor(tensor),
    # correct, but PyTorch warns about it on stderr.
    buggy = function_source(MUTANT, "scaled_dot_product_attention")
    padding = cell(read(root / "source" / "masks" / "masks.ipynb"), "padding_mask").source
    warns = padding.replace(
        "    lengths = torch.as_tensor(lengths)\n",
        "    lengths = torch.tensor(torch.as_tensor(lengths))  # PyTorch: UserWarning\n",
    )
    assert warns != padding

    # Dave: deletes one test cell and duplicates a solution cell (attention); deletes the
    # padding_mask cell (masks).
    dave_attention = answered(root, "attention")
    dave_attention.cells.remove(cell(dave_attention, "test-reference"))
    bias = cell(dave_attention, "attention_with_bias")
    duplicate = copy.deepcopy(bias)
    duplicate.id = "copy-of-attention-with-bias"  # Jupyter gives a copied cell a new id
    dave_attention.cells.insert(dave_attention.cells.index(bias), duplicate)
    dave_masks = answered(root, "masks")
    dave_masks.cells.remove(cell(dave_masks, "padding_mask"))

    # Eve: two lines that patch the test cells' grade function, and no implementation.
    eve = read(root / "release" / "attention" / "attention.ipynb")
    first = next(c for c in eve.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source = PATCH_GRADE + first.source

    frank = frank_notebook(root)

    release = read(root / "release" / "attention" / "attention.ipynb")
    downloads = {
        "attention": {
            "alice_attention.ipynb": read(root / "source" / "attention" / "attention.ipynb"),
            "bob_attention.ipynb": release,
            "dave_attention.ipynb": release,  # his first try, superseded by the resubmission
            "LATE_dave_attention-1.ipynb": dave_attention,
            "carol.zip": answered(root, "attention", {"scaled_dot_product_attention": buggy}),
            "eve_attention.ipynb": eve,
            "mystery.ipynb": release,
        },
        "masks": {
            "alice_masks.ipynb": read(root / "source" / "masks" / "masks.ipynb"),
            "bob_masks.ipynb": read(root / "release" / "masks" / "masks.ipynb"),
            "dave_masks.ipynb": dave_masks,
            "carol_masks_final.ipynb": answered(root, "masks", {"padding_mask": warns}),
            "frank_masks.ipynb": frank,
        },
    }
    for assignment, files in downloads.items():
        archive = root / "downloaded" / assignment / "archive"
        archive.mkdir(parents=True)
        for name, nb in files.items():
            if name.endswith(".zip"):  # one archive per student, holding the notebook
                with zipfile.ZipFile(archive / name, "w") as z:
                    info = zipfile.ZipInfo(f"{assignment}.ipynb", date_time=ON_TIME.timetuple()[:6])
                    z.writestr(info, nbformat.writes(nb))
            else:
                nbformat.write(nb, archive / name)
                os.utime(archive / name, (ON_TIME.timestamp(), ON_TIME.timestamp()))
    # The timestamps are the downloads' own: dave's resubmission came 1.5 days after the due
    # date, his first file before it; `mystery.ipynb` cannot say whose it is.
    archive = root / "downloaded" / "attention" / "archive"
    os.utime(archive / "dave_attention.ipynb", (EARLY.timestamp(), EARLY.timestamp()))
    os.utime(archive / "LATE_dave_attention-1.ipynb", (LATE.timestamp(), LATE.timestamp()))
    (archive / "notes.txt").write_text("not a notebook")
    config = root / course_config.FILE
    text = config.read_text()
    text = text.replace('policy = "none"', 'policy = "penalty"').replace(
        "per_day = 0.10", "per_day = 0.25"
    )
    text = text.replace('attention = ""', f'attention = "{DUE:%Y-%m-%d %H:%M}"')
    config.write_text(text)

    collected = course.collect(root)
    summary = course.autograde(root)
    course.feedback(root)
    grades = course.export(root)
    scores, rows = {}, {}
    with grades.open() as f:
        for row in csv.DictReader(f):
            rows[row["student_id"], row["assignment"]] = row
            if row["status"] != "missing":
                scores[row["student_id"], row["assignment"]] = (
                    float(row["raw_score"]),
                    float(row["max_score"]),
                )
    return Cycle(root, scores, rows, collected, summary)


def max_points(module: str) -> float:
    return sum(c.points for c in registry.checks_of(module))


def test_scratch_cells_and_retagged_cells_change_nothing_official(cycle):
    """frank: the release's own cells decide what is graded, not his metadata; his
    self-checks, magics, plot, prints, a cell that raises and a scratch copy of causal_mask
    neither break nor change the grade; his helper cell is graded as his code."""
    root, scores = cycle
    assert scores["frank", "masks"] == scores["alice", "masks"]
    assert scores["frank", "masks"] == (max_points("masks"), max_points("masks"))
    feedback = text_of_html(root / "feedback" / "frank" / "masks" / "masks.html")
    assert "[import-error]" not in feedback and "[not-defined]" not in feedback


def test_checksum_warnings_only_for_a_locked_cell_a_student_edited(cycle):
    """No test cell holds hidden tests, so nbgrader's recorded cell is the released one: no
    warning for the kit's own cells, one for the cell frank edited."""
    warnings = [w for w in cycle.summary["warnings"] if "'checksum'" in w]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("frank: ") and f"cell {EDITED_TEST} has" in warnings[0]


def test_no_official_result_is_zero_with_the_reason_never_the_kernels(cycle, tmp_path):
    """A notebook the judge could not grade, or a check without an official result, gets 0
    and says why, whatever the kernel's cells scored (a notebook can patch those)."""
    from nbgrader.api import Gradebook

    root = tmp_path / "course"
    shutil.copytree(cycle[0], root)
    config = course_config.load(root)
    url = f"sqlite:///{root / 'gradebook.db'}"

    def grades(student):
        with Gradebook(url, course_judge.COURSE_ID) as gb:
            nb = gb.find_submission_notebook("masks", "masks", student)
            return (
                {g.name: g.score for g in nb.grades},
                {c.name: c.auto_comment for c in nb.comments},
            )

    seed = config.seed("alice", "masks")
    reason = "the sandbox could not start"
    course_judge.record(root, config, [course_judge.Judged("alice", "masks", seed, notes=[reason])])
    scores, comments = grades("alice")
    assert scores and set(scores.values()) == {0.0}
    assert comments and all(reason in (c or "") for c in comments.values()), comments
    graded = read(root / "autograded" / "alice" / "masks" / "masks.ipynb")
    assert reason in outputs_text(graded)
    # carol: every check but one has an official result: a set that does not add up is no
    # grade (sinks.TotalMismatch), so her cells score 0 with the reason, not the kernel's
    checks = registry.checks_of("masks")
    results = [Result.of(c, "passed") for c in checks[1:]]
    judged = course_judge.Judged("carol", "masks", seed, results=results)
    course_judge.record(root, config, [judged])
    scores, comments = grades("carol")
    assert scores and set(scores.values()) == {0.0}
    assert all("adds up to" in (c or "") for c in comments.values()), comments
    assert not judged.results and judged.max_score == max_points("masks")


def test_collect_put_every_submission_in_place(cycle):
    root, _ = cycle
    for student in ("alice", "bob", "carol", "dave"):
        for module in MODULES:
            assert (root / "submitted" / student / module / f"{module}.ipynb").is_file()


def test_solutions_get_full_marks(cycle):
    _, scores = cycle
    for module in MODULES:
        assert scores["alice", module] == (max_points(module), max_points(module))


def test_untouched_release_gets_zero(cycle):
    root, scores = cycle
    for module in MODULES:
        assert scores["bob", module] == (0.0, max_points(module))
    feedback = text_of_html(root / "feedback" / "bob" / "attention" / "attention.html")
    assert "[not-attempted] scaled_dot_product_attention is not attempted yet" in feedback


def test_classic_bug_gets_partial_credit_and_its_message(cycle, tmp_path):
    root, scores = cycle
    score, total = scores["carol", "attention"]
    # The same code graded by the engine `make grade` uses gives the same points.
    mutant = submission_with(tmp_path, {"attention": MUTANT.read_text()})
    expected = sum(r.score for r in grade_folder(mutant, ["attention"]))
    assert 0 < score == expected < total
    feedback = text_of_html(root / "feedback" / "carol" / "attention" / "attention.html")
    assert f"[no-scaling] {NO_SCALING.message}" in feedback
    # nbgrader feedback shows the first hint level written (ladder.NOTEBOOK_LEVELS)
    assert NO_SCALING.level(1)[1].split(".")[0] in feedback


def test_pytorch_warning_on_stderr_keeps_the_points(cycle, tmp_path, monkeypatch, capsys):
    root, scores = cycle
    assert scores["carol", "masks"] == (max_points("masks"), max_points("masks"))
    graded = read(root / "autograded" / "carol" / "masks" / "masks.ipynb")
    padding = cell(graded, "test-padding")
    text = "".join(o.get("text", "") for o in padding.outputs)
    # make autograde's kernel runs no check: the sandbox placement decides (course_judge)
    assert "graded outside this notebook by the sandboxed grader" in text
    assert f"{course_judge.OFFICIAL}: " in text and "PASS" in text
    assert all(o.get("name") != "stderr" for o in padding.outputs)
    # In the student's own kernel the check runs there, and the warning is re-printed on
    # stdout: nbgrader would give zero to a test cell with stderr output.
    monkeypatch.delenv(notebook.HIDDEN_VARIABLE, raising=False)
    source = (SOLUTIONS / "masks.py").read_text()
    warns = source.replace(
        "    lengths = torch.as_tensor(lengths)\n",
        "    lengths = torch.tensor(torch.as_tensor(lengths))  # PyTorch: UserWarning\n",
    )
    assert warns != source
    notebook.grade("masks.padding", _namespace(warns, str(tmp_path / "cell.py")))
    out = capsys.readouterr().out
    assert "UserWarning: To copy construct from a tensor" in out  # the warning did happen
    assert "PASS" in out


def test_deleted_and_duplicated_cells_are_graded_sensibly(cycle):
    root, scores = cycle
    # The deleted test cell is put back and graded; the duplicated solution cell is harmless.
    assert scores["dave", "attention"] == (max_points("attention"), max_points("attention"))
    graded = read(root / "autograded" / "dave" / "attention" / "attention.ipynb")
    assert "was missing from the submission" in cell(graded, "test-reference").source
    # The deleted solution cell costs exactly its own checks, with a message that says why.
    padding = sum(c.points for c in registry.checks_of("masks") if c.exercise == "padding_mask")
    assert scores["dave", "masks"] == (max_points("masks") - padding, max_points("masks"))
    feedback = text_of_html(root / "feedback" / "dave" / "masks" / "masks.html")
    assert "padding_mask is not defined in this notebook" in feedback


def test_collect_maps_renamed_late_and_resubmitted_files_and_reports_the_rest(cycle):
    root = cycle[0]
    by_name = {i.source.split("/archive/")[1]: i for i in cycle.collected}
    carol = by_name["carol_masks_final.ipynb"]  # does not fit the pattern: its metadata tells
    assert (carol.action, carol.student, carol.assignment) == ("mapped", "carol", "masks")
    assert not (root / "submitted" / "carol_masks").exists()  # no phantom student
    late = by_name["LATE_dave_attention-1.ipynb"]
    assert (late.action, late.student, late.assignment) == ("collected", "dave", "attention")
    assert late.late_mark and late.resubmission == 1
    assert by_name["dave_attention.ipynb"].action == "superseded"
    assert by_name["mystery.ipynb"].action == "skipped"  # whose? the name cannot say
    assert by_name["notes.txt"].action == "skipped"
    report = (root / "collect-report.txt").read_text()
    for text in ("carol_masks_final.ipynb -> carol / masks", "mystery.ipynb: ", "superseded"):
        assert text in report
    # The timestamp is the download's own.
    stamp = (root / "submitted" / "dave" / "attention" / "timestamp.txt").read_text()
    assert stamp.startswith(f"{LATE:%Y-%m-%d %H:%M:%S}")


def test_autograde_grades_everyone_else_and_ends_with_a_summary(cycle):
    summary = cycle.summary
    graded = sorted(line.split(":")[0] for line in summary["graded"])
    expected = [f"{s} / attention" for s in ("alice", "bob", "carol", "dave", "eve")]
    masks = [f"{s} / masks" for s in ("alice", "bob", "carol", "dave", "frank")]
    assert graded == sorted(expected + masks)
    assert not summary["failed"]
    assert any("mystery.ipynb" in line for line in summary["skipped"])


def test_patching_grade_in_the_kernel_gains_nothing(cycle):
    root, scores = cycle
    assert scores["eve", "attention"] == (0.0, max_points("attention"))
    # In her kernel the patch worked: no test cell failed there. The kernel decides nothing.
    graded = read(root / "autograded" / "eve" / "attention" / "attention.ipynb")
    tests = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert tests and not any(o.output_type == "error" for c in tests for o in c.outputs)
    feedback = text_of_html(root / "feedback" / "eve" / "attention" / "attention.html")
    assert f"{course_judge.OFFICIAL}: attention: " in feedback
    # Graded in the sandbox from the release's cells: her import of the kit is left out, her
    # patch is a failing line that costs nothing, and her stub is what is graded.
    assert "[not-attempted]" in feedback and "[import-error]" not in feedback


def test_late_policy_and_missing_submissions_in_grades_csv(cycle):
    dave = cycle.rows["dave", "attention"]
    raw = float(dave["raw_score"])
    assert dave["status"] == "late" and raw == max_points("attention")
    assert float(dave["late_penalty"]) == pytest.approx(raw * 0.25 * 2)  # two started days
    assert float(dave["score"]) == pytest.approx(raw * 0.5)
    assert cycle.rows["alice", "attention"]["status"] == "graded"  # on time: no penalty
    assert cycle.rows["alice", "attention"]["late_penalty"] == "0"
    eve = cycle.rows["eve", "masks"]  # nothing submitted: told from a zero
    assert eve["status"] == "missing" and eve["score"] == eve["raw_score"] == ""
    assert cycle.rows["bob", "masks"]["score"] == "0"  # a submitted zero


def test_feedback_shows_the_official_verdict_with_the_misconception(cycle):
    root, _ = cycle
    feedback = text_of_html(root / "feedback" / "carol" / "attention" / "attention.html")
    assert f"{course_judge.OFFICIAL}: attention: " in feedback
    assert f"[no-scaling] {NO_SCALING.message}" in feedback


def test_class_report_from_the_gradebook(cycle, tmp_path):
    from autograder.channels import class_report

    root, _ = cycle
    data = class_report.load(root)
    index = class_report.write(data, tmp_path / "report").read_text()
    found = {(ex, mis): n for ex, mis, n, _ in class_report.misconceptions(data)}
    assert found["attention.scaled_dot_product_attention", "no-scaling"] == 1  # carol
    # nothing submitted for masks: one row for eve, not one per assignment
    todo = {s: missing for s, _, _, missing in class_report.unattempted(data)}
    assert todo["eve"] == ["masks"] and "nothing submitted" not in index
    carol = (tmp_path / "report" / "students" / "carol.html").read_text()
    assert "../../" in carol and "feedback/carol/attention/attention.html'" in carol
    assert "no-scaling" in carol  # her mistake, named on her page
    assert "mystery.ipynb</td><td>download skipped: " in index
    with open(tmp_path / "report" / "canvas.csv", newline="") as f:
        canvas = {row[3]: row for row in list(csv.reader(f))[2:]}
    assert canvas["eve"][5:] == ["0", ""]  # attention: a zero; masks: missing
    assert float(canvas["dave"][5]) == max_points("attention") / 2  # after the late penalty


def test_regrade_one_student_reuses_the_seed_and_leaves_the_others(cycle, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(cycle[0], root)
    # Eve hands in a correct notebook after a deadline extension; only she is graded again.
    source = root / "source" / "attention" / "attention.ipynb"
    shutil.copy(source, root / "submitted" / "eve" / "attention" / "attention.ipynb")
    proc = run_cli("regrade", "--root", str(root), "--student", "eve", "--assignment", "attention")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "autograde summary: 1 notebooks graded" in proc.stdout
    config = course_config.load(root)
    assert config.seed("eve", "attention") == course_config.load(cycle[0]).seed("eve", "attention")
    course.export(root)
    with (root / "grades.csv").open() as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    assert float(rows["eve", "attention"]["score"]) == max_points("attention")
    for key, row in cycle.rows.items():
        if key != ("eve", "attention"):
            assert rows[key] == row
    proc = run_cli("regrade", "--root", str(root), "--student", "nobody")
    assert proc.returncode == 2 and "STUDENT='nobody' has no submission" in proc.stderr


def _grades(path: Path) -> dict:
    with path.open() as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def test_a_course_toml_change_is_named_stale_and_regrade_all_applies_it(
    cycle, tmp_path, monkeypatch, capsys
):
    """course.toml edited after autograding (a due date, the late policy, a check's points):
    make export names the grades computed under the old one (never 'late' with no penalty);
    make regrade ALL=1 applies the new one to everyone from the stored results (records.py),
    the sandbox re-running only a notebook that changed; no score exceeds its maximum (a
    point override after the release once gave 21 / 20: the gradebook's cell kept its
    released points). canvas.csv holds the ids of the roster."""
    root = tmp_path / "course"
    shutil.copytree(cycle[0], root)
    monkeypatch.setattr(course, "nbgrader", lambda *a, **k: None)  # no nbgrader-grades.csv
    assert {p.parent.name for p in (root / "records").glob("*/attention.json")} == {
        "alice", "bob", "carol", "dave", "eve"
    }  # fmt: skip
    toml = root / course_config.FILE
    text = toml.read_text().replace("per_day = 0.25", "per_day = 0.3")
    text = text.replace('masks = ""', f'masks = "{EARLY:%Y-%m-%d %H:%M}"')
    toml.write_text(text.replace("[points]", '[points]\n"attention.reference" = 4', 1))
    (root / "roster.csv").write_text(
        "id,name,canvas_id,sis_user_id,section\n"
        "alice,Alice Liddell,1001,A-1,Sec 1\ndave,Dave Bowman,1004,,Sec 2\n"
    )
    capsys.readouterr()
    course.export(root)
    out = capsys.readouterr().out
    rows = _grades(root / "grades.csv")
    graded = [k for k, r in rows.items() if r["status"] != "missing"]
    assert f"{len(graded)} of {len(graded)} grades are stale" in out
    assert "make regrade ALL=1" in out
    skip = ("stale", "duedate")  # the due date column is course.toml's, as it is now
    for key, row in rows.items():  # the rest as recorded, under the old course.toml
        before = cycle.rows[key]
        assert {k: v for k, v in row.items() if k not in skip} == {
            k: v for k, v in before.items() if k not in skip
        }
    assert rows["alice", "masks"]["stale"] == "[late] (the late policy); [due] masks"
    assert "[points] (the points of its checks)" in rows["alice", "attention"]["stale"]

    # bob hands in the solutions for masks after the deadline moved: only he runs again.
    shutil.copy(
        root / "submitted" / "alice" / "masks" / "masks.ipynb",
        root / "submitted" / "bob" / "masks" / "masks.ipynb",
    )
    again = []
    with monkeypatch.context() as m:
        m.setattr(course, "nbgrader", lambda *a, **k: pytest.fail(f"nbgrader ran: {a}"))
        m.setattr(course_judge, "Sandbox", lambda *a, **k: pytest.fail("the sandbox ran"))
        m.setattr(
            course, "autograde", lambda root, a, students, settings: again.append((a, students))
        )
        summary = course.regrade_all(root)
    assert again == [(["masks"], ["bob"])]
    assert summary["rerun"] == ["bob / masks: the submitted notebook changed since it was graded"]
    assert len(summary["reapplied"]) == len(graded) - 1

    course.export(root)
    rows = _grades(root / "grades.csv")
    assert [k for k, r in rows.items() if r["stale"]] == [("bob", "masks")]  # not rerun here
    full = max_points("attention") + 1
    for (student, module), row in rows.items():
        if row["status"] != "missing":
            assert float(row["raw_score"]) <= float(row["max_score"]), (student, module)
            assert float(row["score"]) <= float(row["max_score"]), (student, module)
            if row["status"] == "late" and float(row["raw_score"]):
                assert float(row["late_penalty"]) > 0, (student, module)
        if module == "attention":
            assert float(row["max_score"]) == full
    assert float(rows["alice", "attention"]["raw_score"]) == full
    dave = rows["dave", "attention"]  # two started days late, 0.3 a day
    assert dave["status"] == "late" and float(dave["raw_score"]) == full
    assert float(dave["score"]) == pytest.approx(full * 0.4)
    alice = rows["alice", "masks"]  # handed in on time for the old (no) due date
    assert alice["status"] == "late" and float(alice["score"]) == pytest.approx(
        max_points("masks") * 0.4
    )
    graded_nb = read(root / "autograded" / "alice" / "attention" / "attention.ipynb")
    verdicts = outputs_text(nbformat.from_dict({"cells": [cell(graded_nb, "test-reference")]}))
    assert ": 4 / 4  PASS" in verdicts  # the feedback shows the points course.toml gives

    with open(root / "canvas.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][:7] == [*course_export.CANVAS_FIXED, "Attention Lab: attention",
                             "Attention Lab: masks"]  # fmt: skip
    assert canvas[1][5:] == [f"{full:g}", f"{max_points('masks'):g}"]
    by_login = {row[3]: row for row in canvas[2:]}
    assert by_login["alice"][:5] == ["Alice Liddell", "1001", "A-1", "alice", "Sec 1"]
    assert by_login["alice"][5:] == [rows["alice", m]["score"] for m in MODULES]
    assert by_login["dave"][:5] == ["Dave Bowman", "1004", "", "dave", "Sec 2"]
    assert by_login["eve"][:5] == ["eve", "", "", "eve", ""]
    assert by_login["eve"][6] == ""  # nothing submitted: empty, not 0


def test_one_total_in_every_channel(tmp_path):
    """nbgrader's maximum per assignment is the module's one total (sinks.module_max, every
    check, the training runs included), as in every channel (tests/kit/test_one_total.py);
    make grade leaves the training runs to make grade-train and names them with their points."""
    proc, data = grade_cli(ROOT / "assignments", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for module in course.course_modules():
        grade_total = sum(
            t["max_score"] for t in data["tests"] if t["name"].startswith(module + ": ")
        )
        slow = [c for c in registry.checks_of(module) if c.slow]
        assert grade_total + sum(c.points for c in slow) == sinks.module_max(module), module
        for c in slow:
            assert f"Left out: {c.name}" in " ".join(proc.stdout.split()), c.id
        recorded = data["extra_data"]["modules"][module]
        assert recorded["module_max"] == sinks.module_max(module), module
        assert [c["id"] for c in recorded.get("left_out", [])] == [c.id for c in slow], module
        nb = course.notebook(module)
        cells = [c.metadata["nbgrader"] for c in nb.cells if "nbgrader" in c.metadata]
        assert sum(m["points"] for m in cells if m["grade"]) == sinks.module_max(module), module


def test_nbgrader_points_equal_make_grade_points(cycle, tmp_path):
    _, scores = cycle
    proc, data = grade_cli(SOLUTIONS, tmp_path, "--ex", ",".join(MODULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for module in MODULES:
        tests = [t for t in data["tests"] if t["name"].startswith(f"{module}: ")]
        total = sum(t["max_score"] for t in tests)
        got = sum(t["score"] for t in tests)
        assert scores["alice", module] == (got, total)


def test_release_holds_no_solution_and_no_hidden_test(cycle):
    root, _ = cycle
    seed = course_config.load(root).secret
    for module in MODULES:
        text = (root / "release" / module / f"{module}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "HIDDEN" not in text
        assert "hidden=True" not in text and seed not in text
        assert "keepdim=True), 0.0)  # NaN rows -> 0" not in text  # a solution line
        assert course.CODE_STUB.split("(")[0] in text


# --------------------------------------------------------------------------- the notebooks


def test_each_check_is_one_locked_test_cell_with_its_points():
    for module in course.course_modules():
        nb = course.notebook(module)
        ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
        assert len(ids) == len(set(ids))
        for check in course.graded_checks(module):
            meta = cell(nb, f"test-{check.slug}").metadata["nbgrader"]
            assert meta["grade"] and meta["locked"] and not meta["solution"]
            assert meta["schema_version"] == 3 and meta["points"] == check.points
            source = cell(nb, f"test-{check.slug}").source
            assert f'grade("{check.id}", globals())' in source
            # no hidden tests: the hidden tier is judged outside the kernel, and the released
            # cell is the one nbgrader records (no checksum warning for the kit's own cells)
            assert "HIDDEN" not in source and "hidden=True" not in source


def test_the_training_check_runs_once_per_grading(tmp_path, monkeypatch, capsys):
    """gpt's training cell has one call: in autograde's kernel it only says it is graded
    outside (the kernel never trains), and the sandbox trains once, on the student's seed."""
    (train,) = [c for c in registry.checks_of("gpt") if c.slow]
    nb = course.notebook("gpt")
    source = cell(nb, f"test-{train.slug}").source
    assert source.count("grade(") == 1 and "HIDDEN" not in source
    assert cell(nb, f"test-{train.slug}").metadata["nbgrader"]["points"] == train.points
    monkeypatch.setenv(notebook.HIDDEN_VARIABLE, "outside")
    monkeypatch.setattr(notebook, "run", lambda *a, **k: pytest.fail("trained in the kernel"))
    notebook.grade(train.id, {})
    assert notebook.OUTSIDE_NOTE in capsys.readouterr().out
    # make autograde's outside judging: the source notebook (the solutions) as autograded.
    folder = tmp_path / "course" / "autograded" / "alice" / "gpt"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "gpt.ipynb")
    config = course_config.CourseConfig(tmp_path / "course.toml", secret="s3cret")
    (judged,) = course_judge.judge_assignment(tmp_path / "course", config, "gpt", ["alice"])
    ids = [r.check_id for r in judged.results]
    assert ids.count(train.id) == 1 and sorted(ids) == sorted(
        c.id for c in course.graded_checks("gpt")
    )
    assert all(r.passed for r in judged.results), [
        (r.check_id, r.status, r.message) for r in judged.results if not r.passed
    ]


def test_solution_cells_carry_the_regions_of_the_py_source():
    def regions(text):
        return re.findall(r"### BEGIN SOLUTION\n.*?### END SOLUTION", text, flags=re.S)

    for module in course.course_modules():
        nb = course.notebook(module)
        cells = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert regions("\n".join(cells)) == regions((SOLUTIONS / f"{module}.py").read_text())


@pytest.mark.parametrize("module", MODULES)
def test_source_notebook_runs_top_to_bottom(module, tmp_path, monkeypatch):
    """The source notebooks of attention and masks, with the solutions, run top to bottom
    in a kernel with nbgrader's environment, every check public and hidden (an instructor
    trying a source notebook). Every module's released notebook, filled in and untouched,
    runs outside the kit in tests/kit/test_notebook_release.py."""
    from nbclient import NotebookClient

    nb = course.notebook(module)
    graded = registry.checks_of(module)
    for name, value in course.kernel_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    # An instructor trying a source notebook runs the hidden tier in the kernel, with a seed
    # (`make autograde` does not: it judges the hidden tier outside the kernel).
    monkeypatch.delenv(notebook.HIDDEN_VARIABLE)
    monkeypatch.setenv(notebook.SEED_VARIABLE, SEED)
    # The cells hold the public tier only; the instructor adds a cell for the hidden tier.
    calls = "".join(f'grade("{c.id}", globals(), hidden=True)\n' for c in graded)
    nb.cells.append(nbformat.v4.new_code_cell("from autograder.notebook import grade\n" + calls))
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    text = outputs_text(nb)
    for check in graded:
        assert f"PASS  {check.name}: " in text
        assert f"PASS  {check.name} (hidden inputs): " in text


# --------------------------------------------------------------------------- the runner


def test_module_source_reads_the_releases_cells_not_the_students_metadata():
    """What make autograde grades of a notebook (course_judge.module_source), without the
    sandbox: the solution cells found by the release's ids whatever their metadata says, a
    helper and a constant of the student's own cells kept, scratch work left out."""
    release = course.notebook("masks")
    nb = copy.deepcopy(release)
    causal, padding = cell(nb, "causal_mask"), cell(nb, "padding_mask")
    window = cell(nb, "sliding_window_mask")
    del causal.metadata["nbgrader"]
    padding.metadata["nbgrader"]["grade_id"] = "test-padding"  # posing as a test cell
    window.metadata["nbgrader"]["grade_id"] = "scratch"
    window.id = "renamed"  # neither id nor grade id: found by the names it defines
    padding.source = padding.source.replace(
        "lengths = torch.as_tensor(lengths)", "lengths = torch.as_tensor(lengths) + _ZERO"
    )
    causal.source += "\nprint(causal_mask(2))\n" + SELF_CHECK + "\n%time causal_mask(3)"
    scratch = [
        "_ZERO = 0  # a constant the solution uses\nunused = 1 / 0",
        SELF_CHECK,
        "!pip --version\n%matplotlib inline\nraise RuntimeError('a cell that raises')",
        "def causal_mask(L, device=None):\n    return None  # a scratch copy",
        "def broken(:\n    pass  # a cell that does not parse",
    ]
    for i, text in enumerate(scratch):
        nb.cells.insert(nb.cells.index(causal) + 1 + i, nbformat.v4.new_code_cell(text))
    text = course_judge.module_source(nb, "masks", release)
    assert "autograder" not in text and "1 / 0" not in text and "broken" not in text
    assert "a scratch copy" not in text and "RuntimeError" not in text
    namespace: dict = {}
    exec(compile(text, "masks.py", "exec"), namespace)  # imports nothing but torch
    for check in registry.checks_of("masks"):
        result = notebook.run(check.id, namespace)
        assert result.passed, (check.id, result.status, result.message)


def test_an_upload_read_without_a_release_leaves_out_scratch_cells_that_raise(tmp_path):
    """A notebook uploaded to batch, Gradescope or PrairieLearn is read without the course's
    release (channels/batch.with_notebooks): its ordinary cells cannot be told from the given
    imports there, so a self-check or a scratch line in one costs nothing (it zeroed the
    module: the whole cell ran at import)."""
    from autograder.channels.batch import read_notebook

    nb = course.notebook("masks")
    for text in (SELF_CHECK, "print(window_size)", "x = input()", "assert 1 == 2, 'mine'"):
        nb.cells.append(nbformat.v4.new_code_cell(text))
    path = tmp_path / "masks.ipynb"
    nbformat.write(nb, path)
    text = course_judge.module_source(read_notebook(path), "masks")
    namespace: dict = {}
    exec(compile(text, "masks.py", "exec"), namespace)  # nothing of the scratch cells raises
    for check in registry.checks_of("masks"):
        result = notebook.run(check.id, namespace)
        assert result.passed, (check.id, result.status, result.message)


def _namespace(source: str, filename: str) -> dict:
    namespace = {"__name__": "__main__", "__package__": None}  # as in a kernel
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_grade_swaps_in_trusted_code_for_other_modules(tmp_path):
    # A masks namespace whose causal_mask calls this namespace's (broken) attention.
    source = (SOLUTIONS / "masks.py").read_text() + (
        "\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    raise RuntimeError('the student attention ran')\n\n"
        "_causal_mask = causal_mask\n\n"
        "def causal_mask(L, device=None):\n"
        "    q = torch.zeros(1, L, 2)\n"
        "    scaled_dot_product_attention(q, q, q)\n"
        "    return _causal_mask(L, device)\n"
    )
    namespace = _namespace(source, str(tmp_path / "cell.py"))
    broken = namespace["scaled_dot_product_attention"]
    assert notebook.run("masks.causal", namespace).passed
    assert namespace["scaled_dot_product_attention"] is broken  # put back afterwards


def test_a_probe_gets_a_dependency_in_a_notebook_namespace(tmp_path):
    """A notebook's namespace belongs to no package: a probe that asks for a dependency
    module (diagnostics' gradient norms build blocks) gets the trusted stand-in, as the
    notebook's own imports do, and a stub reports "not attempted", not a crash."""
    source = (
        (SOLUTIONS / "diagnostics.py")
        .read_text()
        .replace("from .multihead import", "from autograder.trusted.multihead import")
    )
    namespace = _namespace(source, str(tmp_path / "cell.py"))
    assert namespace["__package__"] is None
    assert notebook.run("diagnostics.ln-gradient-norms", namespace).passed
    stub = "def layer_gradient_norms(blocks, x, target, final_norm=None):\n    " + (
        course.CODE_STUB + "\n"
    )
    namespace = _namespace(stub, str(tmp_path / "stub.py"))
    assert notebook.run("diagnostics.ln-gradient-norms", namespace).status == "not attempted"


def test_grade_reports_not_attempted_and_raises_with_the_hint(tmp_path):
    stub = course.CODE_STUB
    source = (
        "import torch\n\ndef causal_mask(L, device=None):\n    " + stub + "\n\n"
        "def padding_mask(lengths, S):\n    " + stub + "\n"
    )
    namespace = _namespace(source, str(tmp_path / "cell.py"))
    assert notebook.run("masks.causal", namespace).status == "not attempted"
    with pytest.raises(AssertionError, match=r"\[not-attempted\] causal_mask is not attempted"):
        notebook.grade("masks.causal", namespace)
    with pytest.raises(AssertionError, match="sliding_window_mask is not defined"):
        notebook.grade("masks.window", namespace)


def test_hidden_tier_needs_the_seed_and_draws_fresh_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(notebook.SEED_VARIABLE, raising=False)
    namespace = _namespace((SOLUTIONS / "attention.py").read_text(), str(tmp_path / "c.py"))
    with pytest.raises(RuntimeError, match="instructor"):
        notebook.run("attention.reference", namespace, hidden=True)
    monkeypatch.setenv(notebook.SEED_VARIABLE, SEED)
    assert notebook.run("attention.reference", namespace, hidden=True).passed
    check = registry.find("attention.reference")
    hidden = References.hidden(int(SEED)).get(check)["out"]
    public = fixtures.load("attention")["reference"]["out"]
    assert hidden.shape == public.shape and not (hidden == public).all()


def test_cli_verbs_are_registered():
    from autograder.channels.cli import main

    for verb in ("course", "release", "collect", "autograde", "feedback", "export"):
        with pytest.raises(SystemExit) as e:
            main([verb, "--help"])
        assert e.value.code == 0
    assert os.path.basename(sys.executable)  # the kernel runs this Python (course.kernel_env)


# --------------------------------------------------------------------------- the feedback page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Runs after the page has rendered: is each failed check's message on screen, inside the page's
# width (wrapped, no sideways scrolling)? The answer goes in an attribute --dump-dom prints.
PROBE = """<script>
window.addEventListener("load", () => {
  const found = [...document.querySelectorAll("div.check-failed pre")].map(pre => {
    const r = pre.getBoundingClientRect();
    const style = getComputedStyle(pre);
    return {text: pre.innerText, width: r.width, height: r.height, right: r.right,
            overflow: pre.scrollWidth - pre.clientWidth, hidden: style.visibility === "hidden"
            || style.display === "none", viewport: window.innerWidth};
  });
  document.body.setAttribute("data-probe", JSON.stringify(found));
});
</script>"""


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed: `make ci-deps` installs it (apt-get, as CI does)",
)
def test_feedback_page_renders_the_message_visibly_in_headless_chromium(cycle, tmp_path):
    import json

    assert CHROMIUM, "chromium is missing: .ci/run installs it with `make ci-deps`"
    root, _ = cycle
    page = root / "feedback" / "carol" / "attention" / "attention.html"
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)  # reads offline: no MathJax from a CDN
    assert "Test cell</a>" not in text  # the score list names each check
    for check in course.graded_checks("attention"):
        assert f">{html.escape(check.name, quote=False)}</a>" in text
    probed = tmp_path / "page.html"
    probed.write_text(text.replace("</body>", PROBE + "</body>", 1))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,2000"]
    proc = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match, proc.stderr[-2000:]
    shown = json.loads(html.unescape(match.group(1)))
    message = next(s for s in shown if "[no-scaling]" in s["text"])
    assert NO_SCALING.message.split(".")[0] in message["text"]
    assert f"Hint {NO_SCALING.level(1)[0]}/3 (" in message["text"]
    assert "Traceback" not in message["text"]
    assert message["width"] > 0 and message["height"] > 0 and not message["hidden"]
    assert message["right"] <= message["viewport"] and message["overflow"] <= 1  # wrapped
    # A screenshot, to look at (build/feedback-page.png).
    shot = ROOT / "build" / "feedback-page.png"
    shot.parent.mkdir(exist_ok=True)
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file()


def test_nbgrader_commands_load_the_course_config_without_torch(tmp_path):
    """Every `nbgrader` command the course verbs run loads the course's nbgrader_config.py,
    which reads the kit's sanitising steps: from a module that imports nbgrader only, so no
    nbgrader process imports torch or the grader (none of them grades: make autograde judges
    outside them). The config is really read: it brings nbgrader's autograde converter in."""
    config = course.CONFIG.format(code_stub=course.CODE_STUB, kit=str(ROOT))
    (tmp_path / "nbgrader_config.py").write_text(config)
    proc = course.nbgrader(tmp_path, "db", "student", "list", env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "autograder.channels.nbgrader.preprocess" in imported, proc.stderr[-2000:]
    assert "nbgrader.converters.autograde" in imported
    assert "torch" not in imported
    assert not {m for m in imported if m.startswith("autograder.run.") and "forkserver" not in m}
    # Nor a grammar compiled on import: jsonschema 4.25's rfc3987-syntax builds 35 Earley
    # parsers with lark, 1 CPU-s in every process that imports nbformat (pyproject.toml).
    assert not imported & {"lark", "rfc3987_syntax"}, sorted(imported & {"lark", "rfc3987_syntax"})


def test_the_course_verbs_that_grade_nothing_start_without_torch():
    """release, collect, feedback and export load the course's machinery as every course verb
    does (cli/nbgrader_course.course): without torch or the sandbox, which only autograde and
    regrade import, where they grade."""
    code = (
        "import sys\n"
        "from autograder.channels.cli import nbgrader_course\n"
        "course = nbgrader_course.course()\n"
        "assert callable(course.release) and callable(course.export)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'"
        " or m.startswith(('autograder.run.sandbox', 'autograder.run.engine'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert ast.literal_eval(proc.stdout.strip()) == [], proc.stdout
