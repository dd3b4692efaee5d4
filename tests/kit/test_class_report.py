"""`make class-report` on a batch of mutants, stubs, a broken file and copies: plots, the most
common misconceptions with counts and shares, the most-failed checks, work not attempted and
grader problems apart from the mistakes, students with no submission on one line, a page per
student, similar submissions flagged for review, and the LMS exports. One batch (two modules)
for the whole file; the timeouts and the similarity measure are tested on recorded rows and on
the kit's own files, without grading."""

from __future__ import annotations

import csv
import html
import re
import shutil

import pytest
from conftest import KIT, ROOT, SOLUTIONS, expected_misconception, run_cli

from autograder.channels import class_report, similarity
from autograder.core import registry

MUTANTS = {  # student: (module, mutant); two students share a bug, so counts are not all 1
    "m1": ("attention", "no_scaling"),
    "m2": ("attention", "no_scaling"),
    "m3": ("attention", "softmax_over_queries"),
    "m4": ("masks", "causal_blocks_diagonal"),
}
STUBS = ROOT / "assignments"
MODULES = ("attention", "masks")


def mutant_module(module: str, mutant: str) -> str:
    text = (KIT / "mutants" / module / f"{mutant}.py").read_text()
    text = re.sub(r"^from solutions\.\w+ import .*$", "", text, flags=re.M)
    return (SOLUTIONS / f"{module}.py").read_text() + "\n" + text


def renamed(text: str) -> str:
    """The solution with other variable names and other comments: the same code."""
    for old, new in {"scores": "logits", "weights": "attn", "out": "result", "d_k": "dk"}.items():
        text = re.sub(rf"\b{old}\b", new, text)
    return re.sub(r"#[^\n]*", "# my own comment", text)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The batch (attention and masks) and its class report: (batch out, report folder)."""
    tmp = tmp_path_factory.mktemp("class")
    subs, out, report = tmp / "subs", tmp / "batch", tmp / "report"
    subs.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=ignore)
    for student, (module, mutant) in MUTANTS.items():
        shutil.copytree(SOLUTIONS, subs / student, ignore=ignore)
        (subs / student / f"{module}.py").write_text(mutant_module(module, mutant))
    (subs / "empty").mkdir()  # handed in nothing
    (subs / "empty" / "README.txt").write_text("sorry")
    shutil.copytree(STUBS, subs / "stub", ignore=ignore)  # the stubs, as given
    shutil.copytree(SOLUTIONS, subs / "broken", ignore=ignore)  # masks.py does not import
    text = (SOLUTIONS / "masks.py").read_text()
    (subs / "broken" / "masks.py").write_text(text.replace("):\n", ")\n", 1))
    shutil.copytree(STUBS, subs / "carol", ignore=ignore)  # attention renamed, masks a stub
    (subs / "carol" / "attention.py").write_text(renamed((SOLUTIONS / "attention.py").read_text()))
    proc = run_cli(
        "batch", "--submissions", str(subs), "--out", str(out), "--ex", ",".join(MODULES)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    proc = run_cli("class-report", "--from", str(out), "--out", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, report


def section(index: str, heading: str) -> str:
    """The HTML of `index` from the heading named to the next one."""
    start = index.index(f"<h2>{heading}</h2>")
    end = index.find("<h2>", start + 1)
    return index[start : end if end > 0 else None]


def table_rows(text: str) -> list[list[str]]:
    """The rows of the tables in `text`: each cell's text, tags stripped."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", text, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        if cells:
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells])
    return rows


def test_plots_misconceptions_and_failed_checks_count_mistakes_only(graded):
    _, report = graded
    index = (report / "index.html").read_text()
    for png in ("scores.png", "misconceptions.png", "failed-checks.png"):
        assert (report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"src='{png}'" in index
    # The most common misconception: no-scaling, 2 of the 7 students who attempted attention
    # (alice, m1-m4, broken, carol; not the stub, not the student who handed in nothing).
    no_scaling = expected_misconception(KIT / "mutants" / "attention" / "no_scaling.py")
    rows = table_rows(section(index, "Most common misconceptions, per exercise"))
    exercise, mis, title, students, share = rows[0]
    assert mis == no_scaling and students == "2" and share == f"{round(100 * 2 / 7)}%"
    assert title == class_report.title(no_scaling) and "scaled" in title  # a title, not an id
    listed = {r[1] for r in rows}
    for module, mutant in MUTANTS.values():
        assert expected_misconception(KIT / "mutants" / module / f"{mutant}.py") in listed
    # no unattempted work, no grader problem among the misconceptions
    assert not listed & {"not-attempted", "missing-file", "import-error", "timeout"}
    failed = {r[0]: r for r in table_rows(section(index, "Most-failed checks"))}
    for check, _lost, judged, _ in failed.values():
        module = check.split(":")[0]
        # judged: the students who attempted the module and whose code ran (the stub, carol's
        # masks stub and broken's masks.py, which does not import, are not judged)
        assert int(judged) == {"attention": 7, "masks": 5}[module], check


def test_unattempted_work_problems_and_absent_students_are_apart(graded):
    _, report = graded
    index = (report / "index.html").read_text()
    todo = {r[0]: r for r in table_rows(section(index, "Not attempted"))}
    assert todo["stub"][1] == "attention, masks" and todo["carol"][1] == "masks"
    assert "empty" not in todo and "alice" not in todo
    problems = table_rows(section(index, "Grader problems"))
    assert [r[:3] for r in problems] == [["broken", "masks", "import-error"]]
    masks_checks = [c for c in registry.checks_of("masks") if not c.slow]
    assert problems[0][3] == str(len(masks_checks)) and "could not be imported" in problems[0][4]
    graded_section = section(index, "Students not graded")
    assert "No submission at all (1): empty." in graded_section
    assert "<td>empty</td>" not in index  # one line, not a row per module

    with open(report / "canvas.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0] == "Points Possible"
    by_student = {row[3]: row for row in canvas[2:]}
    assert by_student["alice"][5:] == canvas[1][5:]  # full marks
    assert by_student["empty"][5:] == ["", ""]  # missing, not 0
    assert by_student["stub"][5:] == ["0", "0"]  # handed in, not attempted: 0
    assert by_student["broken"][5:] == [canvas[1][5], "0"]  # an import error is a zero

    with open(report / "long.csv", newline="") as f:
        long = list(csv.DictReader(f))
    checks = [c for m in MODULES for c in registry.checks_of(m)]
    assert len(long) == 9 * len(checks)  # every student and check, the empty student too
    empty = [r for r in long if r["student"] == "empty"]  # not attempted: no file, no mistake
    assert {(r["status"], r["misconception"]) for r in empty} == {("not attempted", "missing-file")}


def test_a_page_per_student_with_their_scores_mistakes_and_feedback(graded):
    out, report = graded
    index = (report / "index.html").read_text()
    pages = sorted(p.name for p in (report / "students").iterdir())
    assert pages == sorted(
        f"{s}.html" for s in ["alice", *MUTANTS, "stub", "broken", "carol"]
    )  # not the student with no submission
    assert "href='students/m1.html'" in index
    grid = {r[0]: r for r in table_rows(section(index, "Students"))}
    assert grid["alice"][1:3] == ["20 / 20", "10 / 10"]
    assert grid["broken"][2] == "0 / 10 (import-error)"

    m1 = (report / "students" / "m1.html").read_text()
    no_scaling = expected_misconception(KIT / "mutants" / "attention" / "no_scaling.py")
    mistakes = table_rows(section(m1, "Mistakes (named misconceptions)"))
    assert [r[:3] for r in mistakes] == [["attention", no_scaling, class_report.title(no_scaling)]]
    assert "Your scores were not scaled" in mistakes[0][5]  # their own feedback
    scores = {r[0]: r for r in table_rows(section(m1, "Scores per module"))}
    assert scores["masks"][1] == "10 / 10" and scores["attention"][2] == "graded"
    links = re.findall(r"href='([^']+)'", m1)
    feedback = [link for link in links if link.endswith("feedback.txt")]
    assert (
        feedback
        and (report / "students" / feedback[0]).resolve() == (out / "m1" / "feedback.txt").resolve()
    )

    stub = (report / "students" / "stub.html").read_text()
    assert "<p>None.</p>" in section(stub, "Mistakes (named misconceptions)")
    assert {r[0] for r in table_rows(section(stub, "Not attempted"))} == set(MODULES)
    broken = (report / "students" / "broken.html").read_text()
    assert table_rows(section(broken, "Grader problems (not judged)"))[0][:2] == [
        "masks",
        "import-error",
    ]


def test_similar_submissions_are_flagged_with_a_side_by_side_and_grades_unchanged(graded):
    out, report = graded
    index = (report / "index.html").read_text()
    rows = table_rows(section(index, "Similar submissions"))
    groups = [(r[0], set(r[1].split(", ")), r[2], r[3]) for r in rows]
    same = "the same code as solutions/attention.py"
    # the two no-scaling mutants: the same file; the solution's copies: the same file
    assert ("attention", {"m1", "m2"}, "1.00", "identical files") in groups
    assert ("attention", {"alice", "broken", "m4"}, "1.00", f"identical files; {same}") in groups
    # carol renamed every variable and rewrote every comment of the solution
    assert ("attention", {"alice", "carol"}, "1.00", f"identical after normalisation; {same}") in (
        groups
    )
    # the stub's own text is taken out: the stub and carol's masks stub are not compared
    for r in rows:
        assert "stub" not in r[1].split(", ")
        assert not (r[0] == "masks" and "carol" in r[1])
    for link in re.findall(r"href='(similar/[^']+)'", index):
        page = (report / link).read_text()
        assert '<table class="diff"' in page and "no grade was changed" in page
    # flags never change a grade
    with open(out / "grades.csv", newline="") as f:
        grades = {r["student"]: r for r in csv.DictReader(f)}
    assert grades["carol"]["attention"] == grades["alice"]["attention"]


# --------------------------------------------------------------------------- without grading


def test_timeouts_and_checks_not_run_are_grader_problems_not_misconceptions():
    from autograder.core.check import declared
    from autograder.run import policy  # noqa: F401 (declares the timeout ids)
    from autograder.run.sandbox import runner  # noqa: F401 (declares killed, not-run)

    assert class_report.PROBLEMS <= set(declared())  # every id it names exists
    rows = [
        class_report.Row("ann", "attention", "attention: a", 0, 2, "timed out", "timeout", "x"),
        class_report.Row(
            "ann", "attention", "attention: b", 0, 2, "timed out", "timeout-same-as-above"
        ),
        class_report.Row("ann", "masks", "masks: a", 0, 1, "failed", "not-run", "stopped"),
        class_report.Row("ann", "masks", "masks: b", 1, 1, "passed", ""),
        class_report.Row("ben", "attention", "attention: a", 0, 2, "failed", "no-scaling", "y"),
        class_report.Row("ben", "attention", "attention: b", 2, 2, "passed", ""),
    ]
    data = class_report.ClassData("test", rows=rows)
    assert class_report.misconceptions(data) == [
        ("attention", "no-scaling", 1, 0.5)  # of the two students who attempted it
    ]
    assert class_report.failed_checks(data) == [("attention: a", 1, 1)]  # ann's not judged
    assert class_report.problems(data) == [
        ("ann", "attention", "timeout", 2, "x"),  # "same as above" counted with its timeout
        ("ann", "masks", "not-run", 1, "stopped"),
    ]
    assert data.state("ann", "attention").label == "timeout"
    assert data.state("ann", "masks").label == "graded"
    # no submission at all, and a submission that could not be graded: told apart
    data.totals.update({"amy": {}, "zed": {}})
    data.not_graded.append(("zed", "the .zip cannot be unpacked"))
    assert data.absent() == ["amy"]


def test_the_measure_tells_copies_from_independent_solutions():
    stub = (STUBS / "attention.py").read_text()
    solution = (SOLUTIONS / "attention.py").read_text()
    assert similarity.own_lines(similarity.normalise(stub), similarity.normalise(stub)) == []
    assert similarity.normalise(renamed(solution)) == similarity.normalise(solution)
    # the kit's alternatives: correct code written independently, each below the threshold
    files = {"solution": solution, "renamed": renamed(solution), "stub": stub}
    for path in sorted((KIT / "alternatives" / "attention").glob("*.py")):
        files[path.stem] = re.sub(
            r"^from solutions\.\w+ import .*$", "", path.read_text(), flags=re.M
        )
    found = similarity.compare("attention", files, stub=stub, reference=solution)
    assert found.compared == len(files) - 1  # the stub has no code of its own
    assert [(g.students, g.exact, g.reference) for g in found.groups] == [
        (["renamed", "solution"], False, True)
    ]
    assert found.pairs == []
    # a copy with one line changed is a near duplicate
    tweaked = solution.replace("out = weights @ v", "out = torch.matmul(weights, v)")
    near = similarity.compare("attention", {"a": solution, "b": tweaked}, stub=stub)
    assert near.groups == [] and [(p.a, p.b) for p in near.pairs] == [("a", "b")]
    assert similarity.THRESHOLD <= near.pairs[0].score < 1
