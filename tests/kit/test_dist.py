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


def _build_copy(tmp_path) -> list[str]:
    """`make dist`, unpacked in tmp_path/attention-lab; the archive's names."""
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
    return names


def test_student_copy_grades_stubs_as_not_attempted(tmp_path):
    names = _build_copy(tmp_path)
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
    # A check that ran into the stub of a module it uses (no stand-in for it in the copy)
    # waits on that file, "not written yet"; every other check is not attempted.
    waits = [t for t in data["tests"] if t["tags"] == ["waiting"]]
    assert all(t["tags"] == ["not-attempted"] for t in data["tests"] if t not in waits)
    assert waits and all(": it is not written yet" in t["output"] for t in waits)
    assert {w for t in waits for w in t["extra_data"]["waiting_on"]} <= {
        f"{m}.py" for m in NOT_IN_STUDENT_COPY
    }
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


GELU_LINE = 'h = F.gelu(h) if self.activation == "gelu" else F.relu(h)'


def _tests(copy) -> dict[str, dict]:
    data = json.loads((copy / "build" / "results.json").read_text())
    return {t["name"]: t for t in data["tests"]}


def test_a_correct_module_waits_on_a_failing_own_dependency_in_the_student_copy(tmp_path):
    """The copy runs the student's own blocks.py under gpt.py (no stand-in ships): one bug
    in blocks.py costs points in blocks only; gpt's checks that it breaks WAIT, naming
    blocks.py, counted neither as won nor as lost, until blocks is fixed. The kit itself
    (every stand-in) gives the same gpt.py full marks."""
    _build_copy(tmp_path)
    copy = tmp_path / "attention-lab"
    mine = copy / "mine"
    shutil.copytree(ROOT / "solutions", mine, ignore=shutil.ignore_patterns("__pycache__"))
    good = (mine / "blocks.py").read_text()
    assert GELU_LINE in good
    (mine / "blocks.py").write_text(good.replace(GELU_LINE, "h = F.relu(h)"))  # GELU ignored

    proc = _grade(copy, "SUBMISSION=mine", "EX=blocks,gpt")
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    tests = _tests(copy)
    gpt = {n: t for n, t in tests.items() if n.startswith("gpt: ")}
    waited = [t for t in gpt.values() if t["tags"] == ["waiting"]]
    assert waited and all(t["score"] == 0 == t["max_score"] for t in waited)
    assert all(t["extra_data"]["waiting_on"] == ["blocks.py"] for t in waited)
    assert all(t["score"] == t["max_score"] for t in gpt.values())  # gpt loses no point
    assert all(t["status"] == "passed" for t in gpt.values() if t not in waited)
    lost = [n for n, t in tests.items() if t["score"] < t["max_score"]]
    assert lost and all(n.startswith("blocks: ") for n in lost)  # blocks is charged
    points = sum(t["extra_data"]["points"] for t in waited)
    total = f"{points:g} points wait on blocks.py"
    assert "WAIT  0/3  MiniGPT's logits match the reference" in proc.stdout, proc.stdout
    assert "waiting on blocks.py: fix its failing checks first" in proc.stdout
    data = json.loads((copy / "build" / "results.json").read_text())
    line = f"Total: {data['score']:g} / {data['max_score']:g} points ("
    assert f"{line}1 check to fix; {total})" in proc.stdout, proc.stdout

    # EX=gpt alone: blocks is graded quietly to decide, not shown
    proc = _grade(copy, "SUBMISSION=mine", "EX=gpt")
    alone = _tests(copy)
    assert set(alone) == set(gpt) and [n for n in alone if "waiting" in alone[n]["tags"]] == [
        t["name"] for t in waited
    ]
    assert f"({total})" in proc.stdout and "`make grade EX=blocks` shows its checks" in proc.stdout
    proc = subprocess.run(
        ["make", "hint", "EX=gpt", "SUBMISSION=mine", f"VENV={ROOT / '.venv'}"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert "No hint for gpt.py now" in proc.stdout, proc.stdout + proc.stderr

    # Not written yet (the stub): gpt waits, saying so
    shutil.copyfile(copy / "assignments" / "blocks.py", mine / "blocks.py")
    proc = _grade(copy, "SUBMISSION=mine", "EX=gpt")
    stub = _tests(copy)
    assert all(t["score"] == t["max_score"] for t in stub.values())
    assert any("waiting" in t["tags"] for t in stub.values())
    assert "waiting on blocks.py: it is not written yet" in proc.stdout, proc.stdout

    # Fixed: gpt's checks pass, nothing waits
    (mine / "blocks.py").write_text(good)
    proc = _grade(copy, "SUBMISSION=mine", "EX=blocks,gpt")
    data = json.loads((copy / "build" / "results.json").read_text())
    assert data["score"] == data["max_score"] and "  WAIT  " not in proc.stdout, proc.stdout

    # The kit itself (every stand-in) is unchanged: the same gpt.py gets full marks there
    # whatever blocks.py does, and nothing waits
    (mine / "blocks.py").write_text(good.replace(GELU_LINE, "h = F.relu(h)"))
    results = tmp_path / "kit.json"
    proc = subprocess.run(
        ["make", "grade", f"SUBMISSION={mine}", "EX=blocks,gpt", f"RESULTS={results}"]
        + [f"VENV={ROOT / '.venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    kit = {t["name"]: t for t in json.loads(results.read_text())["tests"]}
    assert set(kit) == set(tests) and "  WAIT  " not in proc.stdout, proc.stdout
    assert all(t["score"] == t["max_score"] > 0 for n, t in kit.items() if n.startswith("gpt: "))
    assert [n for n, t in kit.items() if t["score"] < t["max_score"]] == lost


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
