"""`make class-report` on a batch of mutants: plots, the most common misconceptions with counts
and shares, the most-failed checks, students not graded, and the LMS exports."""

from __future__ import annotations

import csv
import re
import shutil

from conftest import KIT, SOLUTIONS, expected_misconception, run_cli

from autograder.core import registry

MUTANTS = {  # student: (module, mutant); two students share a bug, so counts are not all 1
    "m1": ("attention", "no_scaling"),
    "m2": ("attention", "no_scaling"),
    "m3": ("attention", "softmax_over_queries"),
    "m4": ("masks", "causal_blocks_diagonal"),
}


def mutant_module(module: str, mutant: str) -> str:
    text = (KIT / "mutants" / module / f"{mutant}.py").read_text()
    text = re.sub(r"^from solutions\.\w+ import .*$", "", text, flags=re.M)
    return (SOLUTIONS / f"{module}.py").read_text() + "\n" + text


def test_class_report_of_a_batch_of_mutants(tmp_path):
    subs, out, report = tmp_path / "subs", tmp_path / "batch", tmp_path / "report"
    subs.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=ignore)
    for student, (module, mutant) in MUTANTS.items():
        shutil.copytree(SOLUTIONS, subs / student, ignore=ignore)
        (subs / student / f"{module}.py").write_text(mutant_module(module, mutant))
    (subs / "empty").mkdir()  # handed in nothing
    (subs / "empty" / "README.txt").write_text("sorry")
    proc = run_cli(
        "batch", "--submissions", str(subs), "--out", str(out), "--ex", "attention,masks"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    proc = run_cli("class-report", "--from", str(out), "--out", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    index = (report / "index.html").read_text()
    for png in ("scores.png", "misconceptions.png", "failed-checks.png"):
        assert (report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"src='{png}'" in index
    # The most common misconception: no-scaling, 2 of the 5 students graded on attention (the
    # student who handed in nothing is not counted).
    no_scaling = expected_misconception(KIT / "mutants" / "attention" / "no_scaling.py")
    rows = re.findall(
        r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>(\d+)</td><td>(\d+)%</td></tr>", index
    )
    top = rows[0]
    assert top[1] == no_scaling and top[2] == "2" and top[3] == str(round(100 * 2 / 5))
    listed = {mis for _, mis, _, _ in rows}
    for module, mutant in MUTANTS.values():
        assert expected_misconception(KIT / "mutants" / module / f"{mutant}.py") in listed
    assert "<td>empty</td><td>no module file could be imported</td>" in index

    with open(report / "long.csv", newline="") as f:
        long = list(csv.DictReader(f))
    graded = [c for m in ("attention", "masks") for c in registry.checks_of(m) if not c.slow]
    assert len(long) == 6 * len(graded)  # every student and check, the empty student too
    empty = [r for r in long if r["student"] == "empty"]  # not attempted: no file, no mistake
    assert {(r["status"], r["misconception"]) for r in empty} == {("not attempted", "missing-file")}
    with open(report / "canvas.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0] == "Points Possible"
    by_student = {row[3]: row for row in canvas[2:]}
    assert by_student["alice"][5:] == canvas[1][5:]  # full marks
    assert by_student["empty"][5:] == ["", ""]  # missing, not 0
