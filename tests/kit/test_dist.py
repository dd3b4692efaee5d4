"""The student copy: no solutions, nothing that reveals them, and `make grade` works in it
(that it names every mistake the kit names: test_dist_mistakes.py)."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import pytest
from conftest import KIT, ROOT

from autograder.authoring import student_copy
from autograder.channels.cli import dist as cli_dist
from autograder.core import registry
from autograder.core.errors import UsageError
from autograder.trusted import IN_STUDENT_COPY, NOT_IN_STUDENT_COPY

# The stand-ins the README documents in the student copy ("Student copy"): PyTorch built-ins
# under the exercises' names. Shipping another one is a decision to make here, on purpose.
DOCUMENTED_STAND_INS = ("attention", "masks", "multihead")
# What a student types (the copy's `make help`); every other verb is an instructor's.
STUDENT_VERBS = {"help", "venv", "grade", "hint", "watch", "grade-train", "clean"}


def _make(copy, verb, *args):
    """`make -s VERB ARGS` in the student copy, with the kit's .venv."""
    return subprocess.run(
        ["make", "-s", verb, *args, f"VENV={ROOT / '.venv'}"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    )


def _grade(copy, *args):
    """`make grade ARGS` in the student copy, with the kit's .venv."""
    return _make(copy, "grade", *args)


@pytest.fixture
def archive(student_copy_archive):
    """The student copy as `make dist` builds it (conftest.py: one build per test process)."""
    return student_copy_archive


def _unpack(archive, where):
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        tar.extractall(where, filter="data")
    return names, where / "attention-lab"


def test_student_copy_grades_stubs_as_not_attempted(archive, tmp_path):
    names, copy = _unpack(archive, tmp_path)
    assert not [n for n in names if "/solutions/" in n or "/tests/kit/" in n], names
    assert "attention-lab/assignments/attention.py" in names
    assert "attention-lab/Makefile" in names
    for module in NOT_IN_STUDENT_COPY:  # working implementations stay with the instructor
        assert f"attention-lab/autograder/trusted/{module}.py" not in names
    for module in registry.modules():
        assert f"attention-lab/autograder/fixtures/{module}.npz" in names
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
    # The hint ladder works there too (make grade showed the first level: this is the next).
    proc = _make(copy, "hint", "EX=masks")
    assert proc.returncode == 0 and "Hint 2/3" in proc.stdout, proc.stdout + proc.stderr

    # A correct submission graded in the student copy gets full marks, with the student's
    # own modules standing in where the copy has no stand-in (and the output says so).
    shutil.copytree(ROOT / "solutions", copy / "mine")
    proc = _grade(copy, "SUBMISSION=mine")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((copy / "build" / "results.json").read_text())
    assert data["score"] == data["max_score"], [t for t in data["tests"] if t["score"] == 0]
    assert (copy / "build" / "report.html").is_file()
    # The slow training runs too (make grade-train), on the student's own stand-ins.
    proc = _make(copy, "grade-train", "SUBMISSION=mine")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((copy / "build" / "results.json").read_text())  # merged: the trained
    trained = [
        t for t in data["tests"] if t["name"].startswith(("gpt: ", "llama: ", "induction: "))
    ]
    assert trained and data["score"] == data["max_score"], data

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

    # No judge model's body ships (autograder/authoring/student_copy.py).
    for judge in sorted((ROOT / "autograder" / "checks").glob("*/judge*.py")):
        ours = _models(judge.read_text())
        theirs = _models((copy / judge.relative_to(ROOT)).read_text())
        assert set(theirs) == set(ours), judge
        assert all(body == ["..."] for body in theirs.values()), (judge, theirs)

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


def test_a_correct_module_waits_on_a_failing_own_dependency_in_the_student_copy(archive, tmp_path):
    """The copy runs the student's own blocks.py under gpt.py (no stand-in ships): one bug
    in blocks.py costs points in blocks only; gpt's checks that it breaks WAIT, naming
    blocks.py, counted neither as won nor as lost, until blocks is fixed. The kit itself
    (every stand-in) gives the same gpt.py full marks."""
    _, copy = _unpack(archive, tmp_path)
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
    alone = {n: t for n, t in _tests(copy).items() if n.startswith("gpt: ")}  # merged: blocks too
    assert set(alone) == set(gpt) and [n for n in alone if "waiting" in alone[n]["tags"]] == [
        t["name"] for t in waited
    ]
    assert f"({total})" in proc.stdout and "`make grade EX=blocks` shows its checks" in proc.stdout
    proc = _make(copy, "hint", "EX=gpt", "SUBMISSION=mine")
    assert "No hint for gpt.py now" in proc.stdout, proc.stdout + proc.stderr

    # Not written yet (the stub): gpt waits, saying so
    shutil.copyfile(copy / "assignments" / "blocks.py", mine / "blocks.py")
    proc = _grade(copy, "SUBMISSION=mine", "EX=gpt")
    stub = {n: t for n, t in _tests(copy).items() if n.startswith("gpt: ")}  # merged: blocks too
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
    assert student_copy.copied(
        "autograder/feedback/report.py", b"@model\ndef f():\n    pass\n"
    ) == (b"@model\ndef f():\n    pass\n")


def _scan(kit, solutions, *args):
    """tools/working_code_check.py run on `kit`'s autograder package (its JSON report)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "working_code_check.py"), "--solutions"]
        + [str(solutions), *args],
        cwd=kit,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(kit), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["autograder"] == str((kit / "autograder").resolve()), report["autograder"]
    # Every module was imported, but the one that runs the command line when imported.
    assert set(report["skipped"]) == {"autograder.__main__"}, report["skipped"]
    return report


def test_student_copy_holds_no_working_exercise(archive, tmp_path):
    """Every function and class of the copy's autograder package that shares a name or a
    signature with an exercise, put in the exercise's place and probed on the public inputs,
    computes something else than the solution: but the documented stand-ins."""
    _, copy = _unpack(archive, tmp_path)
    assert IN_STUDENT_COPY == DOCUMENTED_STAND_INS
    report = _scan(copy, ROOT / "solutions", "--stand-ins", ",".join(DOCUMENTED_STAND_INS))
    found = report["working"] + report["partial"]
    allowed = tuple(f"autograder.trusted.{m}:" for m in DOCUMENTED_STAND_INS)
    assert [f for f in found if not f.startswith(allowed)] == [], report
    # The scan sees working code where there is some: each shipped stand-in computes its
    # module's exercises (and the judges' models are candidates that compute nothing there).
    for module in DOCUMENTED_STAND_INS:
        assert any(f.startswith(f"autograder.trusted.{module}:") for f in report["working"]), (
            module,
            report,
        )
    assert any(".judge:" in c for c in report["candidates"]), report["candidates"]


def test_student_copy_lists_and_runs_only_the_students_verbs(archive, tmp_path):
    _, copy = _unpack(archive, tmp_path)
    env = {**os.environ, "MAKEFLAGS": ""}
    makefile = (copy / "Makefile").read_text()
    declared = set(re.findall(r"^([a-z-]+):.*## ", makefile, flags=re.M))
    instructor = set(
        re.search(r"^INSTRUCTOR_VERBS := (.*?[^\\])$", makefile, flags=re.M | re.S)
        .group(1)
        .replace("\\", " ")
        .split()
    )
    assert instructor <= declared, instructor - declared
    # Every verb with a help text is the students' or the instructors', on purpose.
    assert declared - instructor == STUDENT_VERBS, declared - instructor
    named = {"course", "release", "collect", "autograde", "feedback", "export", "batch"}
    named |= {"stubs", "fixtures", "dist", "new-module", "test", "translations"}
    named |= {v for v in declared if v.startswith("bench")}
    assert named <= instructor, named - instructor

    help_text = subprocess.run(
        ["make", "help"], cwd=copy, capture_output=True, text=True, env=env, check=True
    ).stdout
    listed = set(re.findall(r"^  make (\S+)", help_text, flags=re.M))
    assert listed == STUDENT_VERBS, help_text
    full = subprocess.run(
        ["make", "help"], cwd=ROOT, capture_output=True, text=True, env=env, check=True
    ).stdout
    assert set(re.findall(r"^  make (\S+)", full, flags=re.M)) == declared, full

    # An instructor's verb says at once that it needs the full kit, and installs nothing
    # (VENV points nowhere: it must not be created).
    venv = tmp_path / "no-venv"
    for verb in sorted(instructor):
        start = time.monotonic()
        proc = subprocess.run(
            ["make", verb, f"VENV={venv}"], cwd=copy, capture_output=True, text=True, env=env
        )
        took = time.monotonic() - start
        assert proc.returncode != 0, (verb, proc.stdout)
        assert "needs the full instructor kit" in proc.stderr, (verb, proc.stderr)
        assert "this is the student copy" in proc.stderr, (verb, proc.stderr)
        assert took < 2.0 and not venv.exists(), (verb, took)
        assert "pip" not in proc.stdout + proc.stderr, (verb, proc.stdout)


def test_every_kit_file_ships_or_stays_on_purpose(monkeypatch):
    """Each file of the kit is on student_copy.SHIPS or STAYS; `make dist` refuses one that
    is on neither, naming it, before it writes anything."""
    files = cli_dist.kit_files()
    shipped, unlisted = student_copy.classify(files)
    assert unlisted == [], unlisted
    assert shipped == cli_dist.dist_files()
    for kept in (
        "solutions/attention.py",
        "tests/kit/conftest.py",
        "autograder/channels/nbgrader/course.py",
    ):
        assert kept in files and kept not in shipped
    for module in NOT_IN_STUDENT_COPY:
        assert f"autograder/trusted/{module}.py" not in shipped
    for module in registry.modules():
        assert f"assignments/{module}.py" in shipped
        assert f"tests/graded/test_{module}.py" in shipped
    # a module's graded files ship once it is on the syllabus; a stranger's do not
    assert student_copy.ships("autograder/checks/newmod/probe.py", ["newmod"])
    assert not student_copy.ships("autograder/checks/newmod/probe.py")
    assert student_copy.ships("autograder/fixtures/gpt.models.npz")  # any stored fixture
    assert not student_copy.ships("autograder/trusted/newmod.py", ["newmod"])

    monkeypatch.setattr(cli_dist, "kit_files", lambda: [*files, "autograder/newthing.py"])
    with pytest.raises(UsageError, match="newthing.py") as e:
        cli_dist.dist_files()
    assert "SHIPS" in str(e.value) and "STAYS" in str(e.value)


def test_new_module_ships_no_working_code(tmp_path):
    """`make new-module` in a copy of the kit: its stand-in (a working implementation) and
    the instructor's files stay out of the student copy; the new stub ships."""
    kit = tmp_path / "kit"
    for name in cli_dist.kit_files():
        (kit / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, kit / name)
    subprocess.run(["git", "init", "-q"], cwd=kit, check=True)
    env = {**os.environ, "PYTHONPATH": str(kit), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*args):
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", *args],
            cwd=kit,
            capture_output=True,
            text=True,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    run("new-module", "--name", "doubling")
    run("stubs", "--module", "doubling")
    run("dist", "--out", str(tmp_path / "student.tar.gz"), "--record", "doubling")
    names, copy = _unpack(tmp_path / "student.tar.gz", tmp_path / "unpacked")
    new = {n.removeprefix("attention-lab/") for n in names if "doubling" in n}
    assert "assignments/doubling.py" in new
    assert "autograder/trusted/doubling.py" not in new
    assert not [n for n in new if n.startswith(("solutions/", "tests/kit/", "course/"))], new
    # The scan finds the stand-in's working `double` in the kit, and nothing in the copy.
    report = _scan(kit, kit / "solutions", "--modules", "doubling")
    assert "autograder.trusted.doubling:double -> doubling.double" in report["working"], report
    report = _scan(copy, kit / "solutions", "--modules", "doubling")
    assert report["working"] == report["partial"] == [], report
    assert report["candidates"], report  # the judge's checks were looked at
