"""Every exercise module has every file it needs (docs/extending.md), and the scaffold that
`make new-module` writes is a module the kit can grade."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from autograder.authoring import scaffold
from autograder.core import paths, syllabus

MIN_MUTANTS, MIN_ALTERNATIVES = 5, 2


def _dependencies() -> set[str]:
    """Modules some solution imports relatively: each needs a trusted stand-in."""
    deps = set()
    for module in syllabus.MODULES:
        tree = ast.parse((paths.SOLUTIONS / f"{module}.py").read_text())
        deps |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    return deps


@pytest.mark.parametrize("module", syllabus.MODULES)
def test_module_has_every_file(module):
    need = [
        paths.SOLUTIONS / f"{module}.py",
        paths.ASSIGNMENTS / f"{module}.py",
        paths.CHECKS / module / "judge.py",
        paths.GRADED_SUITES / f"test_{module}.py",
        paths.FIXTURES / f"{module}.json",
        paths.COURSE_TEXT / f"{module}.md",
        paths.DOCS / f"{module}.md",
    ]
    if module in _dependencies():
        need.append(paths.TRUSTED / f"{module}.py")
    missing = [str(p.relative_to(ROOT)) for p in need if not p.is_file()]
    assert not missing, f"{module} lacks {missing} (docs/extending.md names every file)"
    mutants = list((paths.KIT_TESTS / "mutants" / module).glob("*.py"))
    alternatives = list((paths.KIT_TESTS / "alternatives" / module).glob("*.py"))
    assert len(mutants) >= MIN_MUTANTS, f"{module}: {len(mutants)} mutants, need {MIN_MUTANTS}"
    assert len(alternatives) >= MIN_ALTERNATIVES, f"{module}: {len(alternatives)} alternatives"
    text = (paths.COURSE_TEXT / f"{module}.md").read_text()
    assert len(text.split()) > 80 and "TODO(kit author)" not in text, f"{module}: course text"


def test_scaffold_refuses_bad_names_and_clashes(tmp_path):
    for bad in ("Rotary", "x", "1abc", "a-b", "attention"):
        with pytest.raises(scaffold.ScaffoldError):
            scaffold.create(bad, tmp_path)


def test_new_module_scaffold_grades(tmp_path):
    """make new-module in a copy of the kit: stubs, fixtures and grading work at once."""
    kit = tmp_path / "kit"
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "__pycache__", "course")
    shutil.copytree(ROOT, kit, ignore=ignore)
    shutil.copytree(ROOT / "course" / "text", kit / "course" / "text")
    env = {"PYTHONPATH": str(kit), "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"}

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "autograder", *args],
            cwd=kit,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    made = cli("new-module", "--name", "doubling")
    assert made.returncode == 0, made.stderr
    assert cli("new-module", "--name", "doubling").returncode == 2  # no overwrite
    assert cli("stubs", "--module", "doubling").returncode == 0
    assert cli("fixtures", "--module", "doubling").returncode == 0
    assert '"doubling",\n)' in (kit / "autograder" / "core" / "syllabus.py").read_text()
    assert "| `doubling.py` |" in (kit / "README.md").read_text()
    results = kit / "results.json"
    for folder, score in (("solutions", "1"), ("assignments", "0")):
        graded = cli("grade", "--submission", folder, "--ex", "doubling", "--results", str(results))
        assert graded.returncode == 0, graded.stdout + graded.stderr
        assert f"Total: {score} / 1 points" in graded.stdout, graded.stdout
