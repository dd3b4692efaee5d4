"""Every course verb works with the course in any folder, started from make or from a script,
whatever PATH the shell has: nbgrader, jupyter and alembic are found through the kit's own
interpreter (course.tools_path, course.ensure_gradebook), never through the shell's PATH.

One assignment (masks), one student, a course folder outside the repository and a PATH
without the venv's bin; and `make bench-batch`'s script end to end at a tiny N.
"""

from __future__ import annotations

import csv
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from autograder.channels.nbgrader import course

ASSIGNMENT = "masks"
VENV_BIN = str(Path(sys.executable).parent)


def bare_path() -> str:
    """The shell's PATH without this interpreter's bin folder (the venv's), as a script or a
    shell that never activated the venv has it; /usr/bin and /bin for make and bash."""
    kept = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != VENV_BIN]
    return os.pathsep.join(kept or ["/usr/bin", "/bin"])


def script_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.pop("VIRTUAL_ENV", None)
    return {**env, "PATH": bare_path(), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def verb(cwd: Path, *args: str) -> str:
    """`python -m autograder <args>` as a script would start it: another folder, a bare PATH."""
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd, env=script_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, f"{args}:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def test_tools_path_puts_the_interpreters_bin_first_once():
    path = course.tools_path(os.pathsep.join(["/usr/bin", VENV_BIN, "/bin"]))
    assert path.split(os.pathsep) == [VENV_BIN, "/usr/bin", "/bin"]
    assert course.tools_path(None) == VENV_BIN
    env = course.kernel_env(ROOT)
    assert env["PATH"].split(os.pathsep)[0] == VENV_BIN


def test_a_new_gradebook_needs_no_alembic_console_script(tmp_path, monkeypatch):
    """nbgrader stamps a new gradebook with `alembic heads` run by name; a PATH whose
    `alembic` is broken (a moved venv's #! line) or absent must not matter."""
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "alembic").write_text("#!/nonexistent/python\n")
    (broken / "alembic").chmod(0o755)
    monkeypatch.setenv("PATH", str(broken))
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    (tmp_path / "course-somewhere").mkdir()
    db = course.ensure_gradebook(tmp_path / "course-somewhere")
    assert db == (tmp_path / "course-somewhere" / "gradebook.db").resolve() and db.is_file()
    with sqlite3.connect(db) as con:
        (version,) = con.execute("select version_num from alembic_version").fetchone()
    assert version == ScriptDirectory(ALEMBIC_DIR).get_current_head()
    assert course.ensure_gradebook(db.parent) == db  # an existing gradebook is left alone


def student_notebook(root: Path) -> nbformat.NotebookNode:
    """The released notebook with each solution cell holding the reference code."""
    source = nbformat.read(root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    solution = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }
    nb = nbformat.read(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            cell.source = solution[meta["grade_id"]]
    return nb


def test_the_course_verbs_run_from_a_script_in_a_folder_outside_the_kit(tmp_path):
    """course, release, collect, autograde, export, each started as a script would start
    it (another working folder, PATH without the venv's bin), on a course outside the kit."""
    root = tmp_path / "my-course"  # tmp: outside the repository, not named course/
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    assert ROOT not in root.parents
    verb(elsewhere, "course", "--root", str(root), "--module", ASSIGNMENT)
    verb(elsewhere, "release", "--root", str(root), "--assignment", ASSIGNMENT)
    assert (root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    nbformat.write(student_notebook(root), archive / f"alice_{ASSIGNMENT}.ipynb")
    out = verb(elsewhere, "collect", "--root", str(root), "--assignment", ASSIGNMENT)
    assert (root / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), out
    out = verb(elsewhere, "autograde", "--root", str(root), "--assignment", ASSIGNMENT)
    graded = re.search(rf"alice / {ASSIGNMENT}: ([\d.]+) / ([\d.]+)", out)
    assert graded and float(graded.group(1)) == float(graded.group(2)) > 0, out
    assert "alembic" not in out
    verb(elsewhere, "export", "--root", str(root))
    with (root / "grades.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if "alice" in r.values()]
    assert rows, (root / "grades.csv").read_text()


@pytest.mark.timeout(1200)
def test_bench_batch_runs_end_to_end_at_a_tiny_n(tmp_path):
    """`make bench-batch`'s script at N=2 on one module, from a bare PATH, its output outside
    the repository: both times and their ratio are printed, every notebook graded."""
    out = tmp_path / "bench"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "batch_vs_nbgrader.py"), "--n", "2",
         "--modules", ASSIGNMENT, "--out", str(out)],
        cwd=tmp_path, env=script_env(), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-6000:]
    batch = re.search(r"make batch:\s+([\d.]+) s", text)
    nbgrader = re.search(r"nbgrader autograde:\s+([\d.]+) s\s+\((\d+) notebooks\)", text)
    assert batch and nbgrader and re.search(r"ratio:\s+[\d.]+x", text), text
    assert float(batch.group(1)) > 0 and float(nbgrader.group(1)) > 0
    assert int(nbgrader.group(2)) == 2
    assert (out / "batch" / "batch.json").is_file() and (out / "course" / "gradebook.db").is_file()
