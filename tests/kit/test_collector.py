"""The kit's interpreters start with rare full collections (forkserver.quiet_start: torch's
import alone makes about a million objects, and CPython walked them all each time its heap
grew by a quarter) and settle before their first fork (forkserver.settle): what they imported
is frozen, and the interpreter's own thresholds are back. Student code therefore runs with
the usual collector in every placement: here a module that refuses to import otherwise keeps
its full marks in make grade's forked workers and in the sandbox."""

import json
import shutil
import subprocess
import sys

from conftest import ROOT, SOLUTIONS, grade_cli
from test_batch import batch, grades

# In a fresh interpreter: the interpreter's own thresholds, then what quiet_start and settle
# make of them (settle twice: the second call changes nothing, not even the frozen count).
LIFECYCLE = r"""
import gc, json
defaults = gc.get_threshold()
from autograder.run import forkserver
forkserver.quiet_start()
starting = gc.get_threshold()
import torch  # noqa: F401
forkserver.settle()
settled, frozen = gc.get_threshold(), gc.get_freeze_count()
forkserver.settle()
again = gc.get_threshold(), gc.get_freeze_count()
forkserver.quiet_start()  # a settled process stays settled
print("FOUND " + json.dumps([defaults, starting, settled, frozen, again, gc.get_threshold()]))
"""


def _interpreter_defaults() -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", "import gc; print(list(gc.get_threshold()))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(out)


def test_quiet_start_and_settle():
    proc = subprocess.run(
        [sys.executable, "-c", LIFECYCLE],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("FOUND ")]
    assert proc.returncode == 0 and line, proc.stdout[-2000:] + proc.stderr[-2000:]
    defaults, starting, settled, frozen, again, last = json.loads(line[-1][len("FOUND ") :])
    assert defaults == _interpreter_defaults()
    assert starting[:2] == defaults[:2] and starting[2] == 100 * defaults[2]
    assert settled == defaults and frozen > 100_000  # torch's objects, out of reach
    assert again == [defaults, frozen] and last == defaults


def _guarded_attention(folder, defaults: list[int]) -> None:
    """The solution's attention.py, which refuses to import unless the collector is on with
    the interpreter's own thresholds."""
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    code = (folder / "attention.py").read_text()
    guard = (
        "import gc as _gc\n"
        f"if not _gc.isenabled() or list(_gc.get_threshold()) != {defaults!r}:\n"
        "    raise RuntimeError(f'collector {_gc.isenabled()} {_gc.get_threshold()}')\n"
    )
    (folder / "attention.py").write_text(guard + code)


def test_student_code_runs_with_the_usual_collector_in_make_grade(tmp_path):
    folder = tmp_path / "sub"
    _guarded_attention(folder, _interpreter_defaults())
    proc, data = grade_cli(folder, tmp_path, "--ex", "attention")
    assert data is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    tests = data["tests"]
    assert tests and all(t["score"] == t["max_score"] for t in tests), proc.stdout[-3000:]


def test_student_code_runs_with_the_usual_collector_in_the_sandbox(tmp_path):
    subs = tmp_path / "subs"
    _guarded_attention(subs / "guarded", _interpreter_defaults())
    shutil.copytree(SOLUTIONS, subs / "plain", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    batch(subs, out, "--ex", "attention")
    rows = grades(out)
    assert rows["guarded"]["score"] == rows["plain"]["score"] == rows["plain"]["max_score"], rows
