"""`make gradescope`: autograder.zip, and run_autograder against a simulated root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import docker_like
import pytest
from conftest import SOLUTIONS, module_notebook, run_cli
from test_batch import (
    AM_POINTS,
    MASKS_POINTS,
    leaked_files,
    mutant_source,
    patch_zip,
    sandbox_processes,
    solution_zip,
    stage_attack,
)

from autograder.core import seeds

MODULES = "attention,masks"
# run_autograder runs as in Gradescope's container (tests/kit/docker_like.py: root without
# CAP_SYS_ADMIN, Docker's seccomp profile, no network) wherever this machine can emulate it.
CONTAINER = docker_like.usable() == ""


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gradescope") / "autograder.zip"
    proc = run_cli("gradescope", "--out", str(out), "--ex", MODULES)
    assert proc.returncode == 0, proc.stderr
    return out


def run_autograder(zip_path: Path, root: Path, submission: Path | None, **env: str) -> dict:
    """Unpack the zip as Gradescope does, put the upload in place, run run_autograder."""
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    (root / "submission").mkdir(parents=True)
    if submission is not None:
        shutil.copytree(submission, root / "submission", dirs_exist_ok=True)
    environ = {
        **os.environ,
        "ATTENTION_LAB_GRADESCOPE_ROOT": str(root),
        "ATTENTION_LAB_PYTHON": sys.executable,
        **env,
    }
    entry = ["bash", str(root / "source" / "run_autograder")]
    proc = subprocess.run(
        docker_like.command(entry) if CONTAINER else entry,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (root / "instructor_log.txt").write_text(proc.stdout)  # Gradescope shows it to staff only
    return json.loads((root / "results" / "results.json").read_text())


def check_fields(data: dict) -> None:
    assert isinstance(data["score"], (int, float)) and isinstance(data["tests"], list)
    assert data["tests"] and data["score"] == sum(t["score"] for t in data["tests"])
    for test in data["tests"]:
        assert {"name", "score", "max_score", "status", "output"} <= set(test)
        assert test["name"].split(":")[0] in ("attention", "masks")
        assert test["status"] in ("passed", "failed") and 0 <= test["score"] <= test["max_score"]


def test_zip_holds_what_gradescope_needs(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    assert {"setup.sh", "run_autograder", "requirements.lock", "attention_lab.json"} <= names
    assert "solutions/attention.py" in names and "autograder/fixtures/attention.npz" in names
    assert "data/corpus.txt" in names  # the training checks' corpus (gpt, llama)
    assert not any(n.startswith(("tests/", "assignments/", ".git")) for n in names)
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


def test_run_autograder_correct_empty_and_buggy(autograder_zip, tmp_path):
    correct = run_autograder(autograder_zip, tmp_path / "correct", SOLUTIONS)
    check_fields(correct)
    assert correct["score"] == correct["max_score"] == int(AM_POINTS)
    assert all(t["status"] == "passed" for t in correct["tests"])

    empty = run_autograder(autograder_zip, tmp_path / "empty", None)
    check_fields(empty)
    assert empty["score"] == 0 and "No Python files" in empty["output"]
    assert all("the file is missing" in t["output"] for t in empty["tests"])

    buggy_folder = tmp_path / "buggy_upload"
    shutil.copytree(SOLUTIONS, buggy_folder, ignore=shutil.ignore_patterns("__pycache__"))
    (buggy_folder / "masks.py").write_text(mutant_source("masks", "causal_transposed"))
    buggy = run_autograder(autograder_zip, tmp_path / "buggy", buggy_folder)
    check_fields(buggy)
    assert 0 < buggy["score"] < int(AM_POINTS)
    assert any("causal-transposed" in t["tags"] for t in buggy["tests"])


def test_a_training_check_grades_on_gradescope(tmp_path):
    """gpt with its slow training check, as Gradescope grades it: the zip holds the corpus the
    training checks read (data/corpus.txt); without it every gpt check ended as not-run."""
    out = tmp_path / "gpt.zip"
    proc = run_cli("gradescope", "--out", str(out), "--ex", "gpt")
    assert proc.returncode == 0, proc.stderr
    data = run_autograder(out, tmp_path / "root", SOLUTIONS)
    assert data["tests"] and data["score"] == sum(t["score"] for t in data["tests"])
    trained = [t for t in data["tests"] if t["name"].startswith("gpt: train")]
    assert trained and data["score"] == data["max_score"], [
        (t["name"], t["output"][:200]) for t in data["tests"] if t["score"] < t["max_score"]
    ]


@pytest.mark.parametrize(
    "attack",
    ["read_solutions", "write_results", "exit_at_import", "stored_answers", "read_kit"]
    + ["reexport_trusted", "reexport_judge"],
)
def test_attacks_gain_nothing_in_gradescope_mode(autograder_zip, tmp_path, attack):
    """The attacks aimed at Gradescope's layout (/autograder/source/solutions, the results
    folder); the whole suite runs through the same sandbox in test_batch.py."""
    upload = stage_attack(attack, tmp_path / "attack")
    data = run_autograder(
        autograder_zip,
        tmp_path / "root",
        upload,
        ATTENTION_LAB_TIMEOUT="6",
        ATTENTION_LAB_CHECK_TIMEOUT="1",
    )
    check_fields(data)
    assert data["score"] == 0
    assert data["tests"][0]["score"] == 0 and "1000" not in json.dumps(data["score"])
    assert "KITLEAK" not in json.dumps(data)


def test_no_secret_and_no_survivor_in_gradescope_mode(autograder_zip, tmp_path):
    """A token in the grader's environment never reaches results.json or the instructor's
    log through student output; a daemon the upload starts is dead before results.json is
    written, so it cannot rewrite it."""
    token = "tok-2b7d-gradescope-secret"
    upload = tmp_path / "upload"
    for attack in ("read_secrets", "leave_behind"):
        stage_attack(attack, tmp_path / "attacks")
    upload.mkdir()
    shutil.copy(tmp_path / "attacks" / "read_secrets" / "attention.py", upload / "attention.py")
    daemon = (tmp_path / "attacks" / "leave_behind" / "attention.py").read_text()
    (upload / "masks.py").write_text(daemon.replace("scaled_dot_product_attention", "causal_mask"))
    root = tmp_path / "root"
    data = run_autograder(autograder_zip, root, upload, ATTENTION_LAB_TEST_TOKEN=token)
    check_fields(data)
    written = (root / "results" / "results.json").read_text()
    time.sleep(1)
    assert (root / "results" / "results.json").read_text() == written
    assert token not in written and "LEAK readable" not in written
    assert not sandbox_processes() and not leaked_files()


def test_a_bad_upload_still_gets_results_json(autograder_zip, tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    patch_zip(solution_zip(upload / "work.zip"), flags=0x1)
    data = run_autograder(autograder_zip, tmp_path / "root", upload)
    assert data["score"] == 0 and "password-protected" in data["output"]


def test_a_notebook_upload_is_graded_as_make_autograde_grades_it(autograder_zip, tmp_path):
    """masks.ipynb (the course's notebook, solved) gets masks' full marks; the released
    notebook untouched, under an LMS's download name, gets 0 and says why."""
    solved = tmp_path / "solved"
    module_notebook("masks", solved / "masks.ipynb")
    data = run_autograder(autograder_zip, tmp_path / "root", solved)
    check_fields(data)
    masks = [t for t in data["tests"] if t["name"].startswith("masks:")]
    assert masks and all(t["status"] == "passed" for t in masks)
    assert data["score"] == sum(t["max_score"] for t in masks) == int(MASKS_POINTS)
    assert "masks.ipynb: graded as masks.py" in data["output"]
    assert "No Python files" not in data["output"]

    untouched = tmp_path / "untouched"
    module_notebook("masks", untouched / "judy_LATE_1_2_masks.ipynb", solved=False)
    data = run_autograder(autograder_zip, tmp_path / "root2", untouched)
    assert data["score"] == 0 and "no solution yet" in data["output"]
    assert any("[not-attempted]" in t["output"] for t in data["tests"] if "masks" in t["name"])


@pytest.mark.skipif(not CONTAINER, reason=docker_like.usable() or "")
def test_in_a_container_without_a_second_uid_it_fails_closed(autograder_zip, request):
    """A container whose USER is not root: no uid to confine student code under, no way to
    make the kit root-only. results.json says so (score 0), no student code runs."""
    # outside pytest's root-only folder: the container's user must reach its own files
    root = Path(tempfile.mkdtemp(prefix="attention-lab-nonroot-")) / "autograder"
    request.addfinalizer(lambda: shutil.rmtree(root.parent, ignore_errors=True))
    root.parent.chmod(0o755)
    # the container's user: outside the sandbox uids (another test's sandbox_processes())
    env = {"DOCKER_LIKE_USER": "50000"}
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(root / "source")
    shutil.copytree(SOLUTIONS, root / "submission")
    for path in [root, *root.rglob("*")]:
        os.chown(path, 50000, 50000)
    entry = ["bash", str(root / "source" / "run_autograder")]
    environ = {
        **os.environ,
        "ATTENTION_LAB_GRADESCOPE_ROOT": str(root),
        "ATTENTION_LAB_PYTHON": sys.executable,
        **env,
    }
    proc = subprocess.run(
        docker_like.command(entry), env=environ, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    assert data == {
        "score": 0,
        "tests": [],
        "output": data["output"],
        "stdout_visibility": "hidden",
    }
    assert data["output"].startswith("Not graded: this autograder cannot isolate")
    assert "neither root" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr


def test_gradescope_fails_closed_unless_insecure(autograder_zip, tmp_path):
    """As in a container without CAP_SYS_ADMIN, with the interpreter where the sandbox uid
    cannot read it (or no root): refused, results.json says so; ATTENTION_LAB_INSECURE=1
    grades and every result says it was insecure."""
    refused = run_autograder(
        autograder_zip, tmp_path / "refused", SOLUTIONS, ATTENTION_LAB_SANDBOX_MODE="uid"
    )
    if "Not graded" not in refused.get("output", ""):
        pytest.skip("this machine isolates even without namespaces (interpreter readable)")
    assert refused["score"] == 0 and "cannot isolate" in refused["output"]
    insecure = run_autograder(
        autograder_zip,
        tmp_path / "insecure",
        SOLUTIONS,
        ATTENTION_LAB_SANDBOX_MODE="uid",
        ATTENTION_LAB_INSECURE="1",
    )
    assert "INSECURE" in insecure["output"]


def test_each_submitter_has_their_own_hidden_seed(autograder_zip, tmp_path):
    """The zip carries the secret (root-only once unpacked); the seed comes from it and the
    submitter's Gradescope id, shown in the staff-only log, never in results.json."""
    with zipfile.ZipFile(autograder_zip) as zf:
        info = zf.getinfo(seeds.SECRET_MEMBER)
        assert not (info.external_attr >> 16) & 0o077
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.copy(SOLUTIONS / "masks.py", upload / "masks.py")
    seen = {}
    for who in ("1001", "1002"):
        root = tmp_path / who
        root.mkdir()
        (root / "submission_metadata.json").write_text(json.dumps({"users": [{"id": who}]}))
        data = run_autograder(autograder_zip, root, upload)
        log = (root / "instructor_log.txt").read_text()
        seed = log.split("hidden tier (seed ", 1)[1].split(" ", 1)[0]
        assert f"seed {seed} of {who}" in log
        assert seed not in json.dumps(data)
        assert not (root / "source" / seeds.SECRET_MEMBER).stat().st_mode & 0o077
        seen[who] = seed
    assert seen["1001"] != seen["1002"]


def test_seed_hunt_and_terminal_escapes_gain_nothing_in_gradescope_mode(autograder_zip, tmp_path):
    """Issue 27 in Gradescope's channel: the seed is nowhere the upload's code can find it,
    and nothing it prints or raises reaches results.json with a control character in it."""
    import re
    import unicodedata

    upload = tmp_path / "upload"
    upload.mkdir()
    for attack, module in (("seed_hunt", "attention"), ("terminal_escapes", "masks")):
        stage_attack(attack, tmp_path / "attacks")
        shutil.copy(tmp_path / "attacks" / attack / "attention.py", upload / f"{module}.py")
    root = tmp_path / "root"
    root.mkdir()
    meta = {"id": 4242, "users": [{"id": 9, "email": "s@example.edu"}]}
    (root / "submission_metadata.json").write_text(json.dumps(meta))
    data = run_autograder(autograder_zip, root, upload)
    check_fields(data)
    assert data["score"] == 0
    log = (root / "instructor_log.txt").read_text()
    seed = re.search(r"seed (\d+) of 9", log).group(1)
    assert seed not in json.dumps(data, ensure_ascii=False)
    # What the code printed reaches the instructor's log; the seed there is the title's only.
    assert "SEEDHUNT keyed:" in log and log.count(seed) == 1, log[-3000:]
    texts = [data.get("output", ""), log] + [t["output"] for t in data["tests"]]
    for text in texts:
        bad = {ch for ch in text if unicodedata.category(ch)[0] == "C"} - set("\n\t")
        assert not bad, (bad, text[:300])
