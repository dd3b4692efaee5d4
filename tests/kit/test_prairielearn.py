"""PrairieLearn: `make prairielearn` writes a course folder; its external grader entry point
runs the kit's sandboxed engine against a simulated /grade layout and writes results.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KIT, ROOT, SOLUTIONS, expected_misconception, run_cli

from autograder.feedback import sinks

MODULE = "masks"
MUTANT = KIT / "mutants" / "masks" / "causal_blocks_diagonal.py"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pl") / "prairielearn"
    proc = run_cli("prairielearn", "--out", str(out), "--ex", f"attention,{MODULE}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_course_folder_has_a_question_per_module_with_an_editable_file(course):
    info = json.loads((course / "infoCourse.json").read_text())
    assert info["name"] and info["topics"]
    for module in ("attention", MODULE):
        folder = course / "questions" / f"attention-lab-{module}"
        question = json.loads((folder / "info.json").read_text())
        assert question["gradingMethod"] == "External" and question["type"] == "v3"
        options = question["externalGradingOptions"]
        assert options["image"] and options["entrypoint"].startswith("/grade/serverFilesCourse/")
        page = (folder / "question.html").read_text()
        assert f'<pl-file-editor file-name="{module}.py"' in page
        assert f'source-file-name="{module}.py"' in page
        assert "<pl-external-grader-results>" in page
        stub = (ROOT / "assignments" / f"{module}.py").read_text()
        assert (folder / f"{module}.py").read_text() == stub  # the editor starts from the stub
    kit = course / "serverFilesCourse" / "attention_lab"
    assert (kit / "pl_grade.sh").stat().st_mode & 0o111
    assert "download.pytorch.org/whl/cpu" in (kit / "Dockerfile").read_text()
    ids = [q["id"] for z in json.loads(
        (course / "courseInstances" / "Default" / "assessments" / "homework" /
         "infoAssessment.json").read_text())["zones"] for q in z["questions"]]  # fmt: skip
    assert ids == ["attention-lab-attention", f"attention-lab-{MODULE}"]


def grade(course: Path, root: Path, source: str | None) -> dict:
    """A simulated /grade: serverFilesCourse, tests, student, data; then the entry point."""
    shutil.copytree(course / "serverFilesCourse", root / "serverFilesCourse")
    shutil.copytree(course / "questions" / f"attention-lab-{MODULE}" / "tests", root / "tests")
    (root / "student").mkdir()
    if source is not None:
        (root / "student" / f"{MODULE}.py").write_text(source)
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"variant_seed": 1234, "params": {}}))
    env = {**os.environ, "ATTENTION_LAB_PL_ROOT": str(root), "ATTENTION_LAB_PYTHON": sys.executable}
    entry = root / "serverFilesCourse" / "attention_lab" / "pl_grade.sh"
    proc = subprocess.run(
        ["bash", str(entry)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["gradable"] is True and 0.0 <= data["score"] <= 1.0
    for test in data["tests"]:
        assert {"name", "points", "max_points", "message", "output"} <= set(test)
    total = sinks.module_max(MODULE)  # every check: one total in every channel
    assert sum(t["max_points"] for t in data["tests"]) == total
    return data


def test_grader_gives_full_marks_to_the_solution(course, tmp_path):
    data = grade(course, tmp_path, (SOLUTIONS / f"{MODULE}.py").read_text())
    assert data["score"] == 1.0
    assert all(t["points"] == t["max_points"] and not t["message"] for t in data["tests"])


def test_grader_names_the_bug_of_a_mutant(course, tmp_path):
    text = re.sub(r"^from solutions\.\w+ import .*$", "", MUTANT.read_text(), flags=re.M)
    data = grade(course, tmp_path, (SOLUTIONS / f"{MODULE}.py").read_text() + "\n" + text)
    assert 0.0 < data["score"] < 1.0
    mistake = expected_misconception(MUTANT)
    assert any(t["message"].startswith(f"[{mistake}]") for t in data["tests"])


def test_grader_scores_a_missing_file_zero_and_says_so(course, tmp_path):
    data = grade(course, tmp_path, None)
    assert data["score"] == 0.0 and f"No {MODULE}.py was submitted" in data["message"]
