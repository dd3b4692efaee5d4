"""Slim installs: a student's `make grade` needs the student set only (requirements.lock);
nbgrader, Jupyter and the kit's test tools are instructor extras (requirements-instructor.lock).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from conftest import ROOT, SOLUTIONS, module_notebook

STUDENT = ROOT / "requirements.lock"
INSTRUCTOR = ROOT / "requirements-instructor.lock"
# What the student set must not hold, and what a student's grading run must never import.
# (hypothesis is left importable: in this venv, pytest loads its plugin by entry point.)
EXTRAS = ["nbgrader", "nbformat", "nbclient", "ipykernel", "jupyter_server", "IPython"]


def pins(path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not pinned with =="
            found[name.lower().replace("_", "-")] = version
    return found


def test_student_set_is_torch_numpy_pytest_matplotlib_and_their_needs():
    student, instructor = pins(STUDENT), pins(INSTRUCTOR)
    assert student["torch"] == "2.13.0"
    for name in ("numpy", "pytest", "pytest-timeout", "matplotlib"):
        assert name in student
    for name in ("nbgrader", "jupyterlab", "notebook", "ipykernel", "nbformat", "hypothesis"):
        assert name not in student and name in instructor
    assert not set(student) & set(instructor)  # each package pinned once
    assert len(student) <= 30  # was 121 packages with nbgrader and Jupyter


def test_pyproject_matches_the_locks():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    student, instructor = pins(STUDENT), pins(INSTRUCTOR)
    for spec in project["dependencies"]:
        name, _, version = spec.partition("==")
        assert student[name.lower()] == version, spec
    for spec in project["optional-dependencies"]["instructor"]:
        name, _, version = spec.partition("==")
        assert instructor[name.lower()] == version, spec


def _without_extras(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a Python where importing any instructor extra fails."""
    block = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {EXTRAS!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    return subprocess.run(
        [sys.executable, "-c", block + code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_grading_runs_without_the_instructor_extras(tmp_path):
    results = tmp_path / "results.json"
    proc = _without_extras(
        "from autograder.channels.cli import main\n"
        f"sys.exit(main(['grade', '--submission', {str(SOLUTIONS)!r}, '--ex', 'masks', "
        f"'--results', {str(results)!r}]))\n"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results.is_file() and "masks.py" in proc.stdout


def test_a_notebook_upload_is_extracted_without_the_instructor_extras(tmp_path):
    """Gradescope's and PrairieLearn's images hold the student set: a notebook upload's
    code is extracted there without nbformat or nbgrader, by the one extractor."""
    upload = tmp_path / "upload"
    module_notebook("masks", upload / "masks.ipynb")
    target = tmp_path / "graded"
    proc = _without_extras(
        "from pathlib import Path\n"
        "from autograder.channels.batch import with_notebooks\n"
        f"folder, notes = with_notebooks(Path({str(upload)!r}), Path({str(target)!r}))\n"
        "print(folder, notes)\n"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "masks.ipynb: graded as masks.py" in proc.stdout
    assert "def causal_mask" in (target / "masks.py").read_text()


def test_an_instructor_verb_without_the_extras_says_how_to_get_them(tmp_path):
    proc = _without_extras(
        f"from autograder.channels.cli import main\nsys.exit(main(['collect', '--root', "
        f"{str(tmp_path)!r}]))"
    )
    assert proc.returncode == 2
    assert "make venv-instructor" in proc.stderr


def test_makefile_installs_the_extras_on_first_use_of_an_instructor_verb():
    makefile = (ROOT / "Makefile").read_text()
    verbs = ("course", "release", "collect", "autograde", "regrade", "feedback", "export")
    for verb in (*verbs, "class-report"):  # class-report: rapidfuzz
        assert re.search(rf"^{verb}: \$\(ISTAMP\)", makefile, re.M), verb
    assert re.search(r"^grade: \$\(STAMP\)", makefile, re.M)  # students: the student set


def test_gradescope_setup_installs_cpu_torch_and_the_student_set_only():
    setup = (ROOT / "autograder" / "channels" / "gradescope" / "setup.sh").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in setup
    assert "requirements.lock" in setup and "requirements-instructor" not in setup
