"""PrairieLearn: `make prairielearn` writes a course folder; its external grader entry point
runs the kit's sandboxed engine against a simulated /grade layout and writes results.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import docker_like
import pytest
from conftest import KIT, ROOT, SOLUTIONS, expected_misconception, module_notebook, run_cli
from test_batch import stage_attack

from autograder.feedback import sinks

MODULE = "masks"
MUTANT = KIT / "mutants" / "masks" / "causal_blocks_diagonal.py"
# pl_grade.sh runs as in PrairieLearn's grading container (tests/kit/docker_like.py: root
# without CAP_SYS_ADMIN, Docker's seccomp profile, a read-only cgroup file system, no network)
# wherever this machine can emulate it.
CONTAINER = docker_like.usable() == ""


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
    assert (kit / "data" / "corpus.txt").is_file()  # the training checks' corpus
    assert "download.pytorch.org/whl/cpu" in (kit / "Dockerfile").read_text()
    ids = [q["id"] for z in json.loads(
        (course / "courseInstances" / "Default" / "assessments" / "homework" /
         "infoAssessment.json").read_text())["zones"] for q in z["questions"]]  # fmt: skip
    assert ids == ["attention-lab-attention", f"attention-lab-{MODULE}"]


def run_entry(
    course: Path,
    root: Path,
    source: str | Path | None,
    module: str = MODULE,
    owner: int | None = None,
    **env: str,
) -> tuple[dict, subprocess.CompletedProcess]:
    """A simulated /grade: serverFilesCourse, tests, student, data; then the entry point.
    `source`: the text of student/<module>.py, or a path (a file to upload as it is);
    `owner`: the uid that owns /grade (a container whose user is not root)."""
    shutil.copytree(course / "serverFilesCourse", root / "serverFilesCourse")
    shutil.copytree(course / "questions" / f"attention-lab-{module}" / "tests", root / "tests")
    (root / "student").mkdir()
    if isinstance(source, Path):
        shutil.copy(source, root / "student" / source.name)
    elif source is not None:
        (root / "student" / f"{module}.py").write_text(source)
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"variant_seed": 1234, "params": {}}))
    for path in [root, *root.rglob("*")] if owner is not None else []:
        os.chown(path, owner, owner)
    environ = {
        **os.environ,
        "ATTENTION_LAB_PL_ROOT": str(root),
        "ATTENTION_LAB_PYTHON": sys.executable,
        **env,
    }
    entry = ["bash", str(root / "serverFilesCourse" / "attention_lab" / "pl_grade.sh")]
    proc = subprocess.run(
        docker_like.command(entry) if CONTAINER else entry,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((root / "results" / "results.json").read_text()), proc


def grade(course: Path, root: Path, source: str | Path | None, module: str = MODULE) -> dict:
    data, _proc = run_entry(course, root, source, module)
    assert data["gradable"] is True and 0.0 <= data["score"] <= 1.0
    for test in data["tests"]:
        assert {"name", "points", "max_points", "message", "output"} <= set(test)
    total = sinks.module_max(module)  # every check: one total in every channel
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


def test_a_notebook_upload_is_graded_as_make_autograde_grades_it(course, tmp_path):
    notebook = module_notebook(MODULE, tmp_path / "upload" / f"{MODULE}.ipynb")
    data = grade(course, tmp_path / "root", notebook)
    assert data["score"] == 1.0 and f"{MODULE}.ipynb: graded as {MODULE}.py" in data["output"]


@pytest.mark.parametrize("attack", ["read_kit", "write_results"])
def test_attacks_gain_nothing(course, tmp_path, attack):
    """The attacks aimed at the kit's files (read_kit: solutions, judges, fixtures, stand-ins)
    and at the results, as the attention question's upload (the whole suite runs through
    the same sandbox in test_batch.py, Gradescope's share in test_gradescope.py)."""
    upload = stage_attack(attack, tmp_path / "attack") / "attention.py"
    data = grade(course, tmp_path / "root", upload.read_text(), module="attention")
    assert data["score"] == 0.0 and "KITLEAK" not in json.dumps(data)
    assert not any(t["points"] for t in data["tests"])


@pytest.mark.skipif(not CONTAINER, reason=docker_like.usable() or "")
def test_in_a_container_without_a_second_uid_it_fails_closed(course, request):
    """A grading container whose USER is not root: nothing can be made root-only and there
    is no uid to confine student code under: not gradable, with the reason; no traceback."""
    # outside pytest's root-only folder: the container's user must reach its own files
    root = Path(tempfile.mkdtemp(prefix="attention-lab-nonroot-")) / "grade"
    request.addfinalizer(lambda: shutil.rmtree(root.parent, ignore_errors=True))
    root.parent.chmod(0o755)
    source = (SOLUTIONS / f"{MODULE}.py").read_text()
    # the container's user: outside the sandbox uids (another test's sandbox_processes())
    data, proc = run_entry(course, root, source, owner=50000, DOCKER_LIKE_USER="50000")
    assert data == {"gradable": False, "score": 0.0, "message": data["message"]}
    assert data["message"].startswith("not graded: this grader cannot isolate student code")
    assert "neither root" in proc.stderr and "Traceback" not in proc.stdout + proc.stderr


def test_seed_hunt_and_terminal_escapes_gain_nothing(course, tmp_path):
    """Issue 27 in PrairieLearn's channel: the variant's seed is nowhere the submission's code
    can find it, and nothing it prints or raises reaches results.json with a control
    character in it."""
    import unicodedata

    from autograder.channels import prairielearn

    hunt = (KIT / "attacks" / "seed_hunt" / "attention.py").read_text()
    escapes = (KIT / "attacks" / "terminal_escapes" / "attention.py").read_text()
    source = hunt + "\n" + escapes.split('"""', 2)[2]  # both at import, no causal_mask
    data = grade(course, tmp_path, source)
    assert data["score"] == 0.0
    seed = str(prairielearn._seed(tmp_path, MODULE))
    shown = json.dumps(data, ensure_ascii=False)
    assert seed not in shown
    texts = [data.get("message", ""), data.get("output", "")] + [
        t.get("message", "") + t.get("output", "") for t in data["tests"]
    ]
    for text in texts:
        bad = {ch for ch in text if unicodedata.category(ch)[0] == "C"} - set("\n\t")
        assert not bad, (bad, text[:300])
    assert "SEEDHUNT keyed:" in shown, shown[:2000]
