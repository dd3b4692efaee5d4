"""The student copy: no solutions, nothing that reveals them, and `make grade` works in it."""

import ast
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
from conftest import KIT, ROOT

from autograder import registry, student_copy
from autograder.trusted import NOT_IN_STUDENT_COPY


def _grade(copy, *args):
    """`make grade ARGS` in the student copy, with the kit's .venv."""
    return subprocess.run(
        ["make", "grade", *args, f"VENV={ROOT / '.venv'}"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    )


def test_student_copy_grades_stubs_as_not_attempted(tmp_path):
    out = tmp_path / "student.tar.gz"
    subprocess.run(
        ["make", "-s", "dist", f"VENV={ROOT / '.venv'}"],
        cwd=ROOT,
        check=True,
        env={**os.environ, "MAKEFLAGS": ""},
        capture_output=True,
    )
    built = ROOT / "build" / "attention-lab-student.tar.gz"
    out.write_bytes(built.read_bytes())
    with tarfile.open(out) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path, filter="data")
    assert not [n for n in names if "/solutions/" in n or "/tests/kit/" in n], names
    assert "attention-lab/assignments/attention.py" in names
    assert "attention-lab/Makefile" in names
    for module in NOT_IN_STUDENT_COPY:  # working implementations stay with the instructor
        assert f"attention-lab/autograder/trusted/{module}.py" not in names
    for module in registry.modules():
        assert f"attention-lab/autograder/fixtures/{module}.npz" in names
    copy = tmp_path / "attention-lab"
    proc = _grade(copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((copy / "build" / "results.json").read_text())
    assert data["score"] == 0 and data["tests"]
    assert all(t["tags"] == ["not-attempted"] for t in data["tests"])
    assert "Traceback" not in proc.stdout + proc.stderr
    # Stubs and fixtures are instructors' verbs; the student copy says so instead of failing.
    proc = subprocess.run(
        ["make", "stubs", f"VENV={ROOT / '.venv'}"], cwd=copy, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "this is the student copy" in proc.stderr

    # A correct submission graded in the student copy gets full marks, with the student's
    # own modules standing in where the copy has no stand-in (and the output says so).
    shutil.copytree(ROOT / "solutions", copy / "mine")
    proc = _grade(copy, "SUBMISSION=mine")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((copy / "build" / "results.json").read_text())
    assert data["score"] == data["max_score"], [t for t in data["tests"] if t["score"] == 0]

    # Mistakes still cost their points in the copy, which has no MiniGPT or blocks to replay
    # them on: the references decide (gpt's weight tying from the reference logits).
    shutil.copytree(ROOT / "solutions", copy / "wrong")
    mistakes = {
        "gpt": "_Tied = MiniGPT\n\n\nclass MiniGPT(_Tied):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n"
        "        self.lm_head.weight = nn.Parameter(self.token_embed.weight.detach().clone())\n",
        "diagnostics": "_norms = layer_gradient_norms\n\n\n"
        "def layer_gradient_norms(blocks, x, target, final_norm=None):\n"
        "    return _norms(blocks, x, target, final_norm) ** 2\n",
    }
    for module, code in mistakes.items():
        path = copy / "wrong" / f"{module}.py"
        path.write_text(path.read_text() + "\n\n" + code)
    proc = _grade(copy, "SUBMISSION=wrong", "EX=gpt,diagnostics")
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "graded with your own blocks.py" in proc.stdout, proc.stdout
    data = json.loads((copy / "build" / "results.json").read_text())
    lost = {
        (t["name"].split(":")[0], *t["tags"]) for t in data["tests"] if t["score"] < t["max_score"]
    }
    assert lost == {("gpt", "gpt-no-weight-tying"), ("diagnostics", "ln-grad-squared-norm")}, lost

    # No judge model's body ships (autograder/student_copy.py); the copy grades the
    # solutions, an alternative and a mutant of every module as the instructor's kit does.
    for judge in sorted((ROOT / "autograder" / "checks").glob("*/judge*.py")):
        ours = _models(judge.read_text())
        theirs = _models((copy / judge.relative_to(ROOT)).read_text())
        assert set(theirs) == set(ours), judge
        assert all(body == ["..."] for body in theirs.values()), (judge, theirs)
    check = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "student_copy_check.py"), "--copy", str(copy)]
        + ["--sample", "1"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 wrong" in check.stdout, check.stdout

    # Re-exporting what the copy holds earns nothing beyond the built-in stand-ins: every
    # module a re-export of its stand-in, attention and masks built on the judges' models.
    reexport = copy / "reexport"
    shutil.copytree(copy / "assignments", reexport)
    for module in registry.modules():
        (reexport / f"{module}.py").write_text(f"from autograder.trusted.{module} import *\n")
    for path in (KIT / "attacks" / "reexport_judge").glob("*.py"):
        shutil.copyfile(path, copy / "wrong" / path.name)
    proc = _grade(copy, "SUBMISSION=reexport")
    data = json.loads((copy / "build" / "results.json").read_text())
    earned = {t["name"].split(":")[0] for t in data["tests"] if t["score"] > 0}
    assert earned <= {"attention", "masks", "multihead"}, earned
    proc = _grade(copy, "SUBMISSION=wrong", "EX=attention,masks")
    data = json.loads((copy / "build" / "results.json").read_text())
    assert data["score"] == 0, proc.stdout


def _models(source: str) -> dict[str, list[str]]:
    """{name: its body's statements, unparsed} of every top-level function marked @model
    (or @model.left_out, as the student copy has them)."""
    found = {}
    for node in ast.parse(source).body:
        marks = [ast.unparse(d) for d in getattr(node, "decorator_list", [])]
        if isinstance(node, ast.FunctionDef) and {"model", "model.left_out"} & set(marks):
            found[node.name] = [ast.unparse(n) for n in node.body]
    return found


def test_strip_models_cuts_bodies_and_keeps_everything_else():
    source = (
        "from x import model\n\n\n"
        "@model\n"
        "def _attend(q, k):\n"
        '    """The answer."""\n'
        "    # a comment\n"
        "    return (q @ k).softmax(-1)\n\n\n"
        "def helper(x):\n"
        "    return x + 1\n\n\n"
        "@model\n"
        "def _other(x, *, flag=True):\n"
        "    if flag:\n"
        "        return -x\n"
        "    return x\n"
    )
    out = student_copy.strip_models(source)
    assert "softmax" not in out and "The answer" not in out and "return -x" not in out
    assert "def helper(x):\n    return x + 1\n" in out
    assert out.count("@model.left_out\n") == 2 and "@model\n" not in out
    assert _models(out) == {"_attend": ["..."], "_other": ["..."]}
    compile(out, "judge.py", "exec")
    with pytest.raises(ValueError):
        student_copy.strip_models("@model\ndef f(x): return x\n")
    assert student_copy.copied("autograder/report.py", b"@model\ndef f():\n    pass\n") == (
        b"@model\ndef f():\n    pass\n"
    )
