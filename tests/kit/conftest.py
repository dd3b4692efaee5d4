"""Helpers for the kit's own tests."""

from __future__ import annotations

from autograder.run.forkserver import quiet_start, settle

quiet_start()  # before torch and the test modules: rare full collections while they import

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from autograder.authoring import stubgen
from autograder.core import model_replays
from autograder.run import warm as warm_server
from autograder.run.engine import grade
from autograder.run.submission import Submission

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
KIT = Path(__file__).resolve().parent

# The kit's tests read the English texts, whatever the machine's locale (the Chinese ones are
# asked for by name: --lang zh_CN), and keep their hint-ladder state out of build/. A
# `make grade` they run grades in a fresh process unless it names this process's own warm
# grader (run_cli, warm_grader below): no warm grader is left behind in build/.
os.environ["LANGUAGE"] = "en"
os.environ["WARM"] = "0"
os.environ.pop("ATTENTION_LAB_WARM", None)
if "ATTENTION_LAB_HINT_STATE" not in os.environ:
    _state = Path(tempfile.mkdtemp(prefix="attention-lab-hints-"))
    os.environ["ATTENTION_LAB_HINT_STATE"] = str(_state / "hint-state.json")
    atexit.register(shutil.rmtree, _state, True)

# One thread per test process and per process it starts, unless told otherwise: make test
# already runs a process per core (xdist), and a second OpenMP thread per process only spins
# waiting for a core (recording the judges' models on blocks' 29 variants: 5.7 CPU-s with one
# thread, 24 with two, on 2 shared cores). The sandbox and the forked workers run student code
# with one thread anyway.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
_ENVIRON = dict(os.environ)  # before any test changes it: the warm grader's environment


def student_edited_stubs() -> list[str]:
    """The files of assignments/ where a student has begun: one of the generated
    `raise NotImplementedError(...)` lines is gone. Kit tests that read the committed stubs
    skip those files, except in CI (environment variable CI set), where the kit's own tree is
    never a student's. A stub that differs from generation in any other way is stale, and
    fails."""
    if os.environ.get("CI"):
        return []
    edited = []
    for name, text in stubgen.generate(SOLUTIONS).items():
        path = ROOT / "assignments" / name
        raises = [line for line in text.splitlines() if "raise NotImplementedError(" in line]
        if path.is_file() and raises:
            committed = path.read_text().splitlines()
            if any(line not in committed for line in raises):
                edited.append(name)
    return edited


@pytest.fixture(scope="session")
def pristine_stubs(tmp_path_factory) -> Path:
    """A folder holding the stubs exactly as `make stubs` generates them: the tests that
    grade "the untouched stubs" use it, not assignments/, which may hold a student's work."""
    folder = tmp_path_factory.mktemp("stubs") / "assignments"
    folder.mkdir()
    for name, text in stubgen.generate(SOLUTIONS).items():
        (folder / name).write_text(text)
    return folder


def submission_with(tmp_path: Path, replace: dict[str, str] | None = None) -> Path:
    """A copy of solutions/ with some modules replaced by the given source texts."""
    folder = tmp_path / "submission"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module, source in (replace or {}).items():
        (folder / f"{module}.py").write_text(source)
    return folder


def grade_folder(folder: Path, modules: list[str] | None = None):
    """Grade in-process, public tier (the same checks and engine as `make grade`)."""
    return grade(Submission(folder), modules)


# `make grade` and `make hint` run on the warm grader (autograder/run/warm.py) from a
# student's second grading on: run_cli runs them there too, as a student's terminal does
# (one server per test process, in a folder of its own, stopped when the process ends; the
# client passes its arguments, folder, environment and streams, and the server's fork runs
# the same cli.main). warm=False grades in a fresh process, as a student's first `make
# grade` does (test_warm.py compares the two).
_WARM: dict[str, Any] = {}  # "dir": the socket's folder, "server": its process, "failed"
WARM_VERBS = warm_server.VERBS


def warm_grader() -> Path:
    """This test process's warm grader (the socket's folder): started on first use, and again
    where it has ended (its idle limit; a changed kit stops it). A call that finds none up
    grades directly, as the client does, so a machine where no server starts loses only
    the time (one try)."""
    if "dir" not in _WARM:
        _WARM["dir"] = Path(tempfile.mkdtemp(prefix="al-warm-"))
        atexit.register(_stop_warm_grader, _WARM["dir"])
    where, server = _WARM["dir"], _WARM.get("server")
    if _WARM.get("failed"):
        return where
    if server is None or server.poll() is not None:
        _WARM["server"] = server = subprocess.Popen(
            [sys.executable, "-m", "autograder.run.warm", "serve", str(where)],
            cwd=ROOT,
            env={**_ENVIRON, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120  # on a loaded machine (about 4 s idle)
    while not (where / warm_server.SOCKET).exists():
        if server.poll() is not None or time.monotonic() > deadline:  # none came up: this
            _WARM["failed"] = True  # machine grades directly from now on (one try)
            break
        time.sleep(0.1)
    return where


def _stop_warm_grader(where: Path) -> None:
    warm_server.stop(where)
    shutil.rmtree(where, ignore_errors=True)


def run_cli(*args: str, timeout: float = 300, warm: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    if warm and any(a in WARM_VERBS for a in args) and "--warm" not in args:
        env["ATTENTION_LAB_WARM_DIR"] = str(warm_grader())
        args = ("--warm", "1", *args)
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def grade_cli(folder: Path, tmp_path: Path, *extra: str, warm: bool = True):
    """`make grade`'s path: returns (process, results.json as a dict)."""
    results = tmp_path / "results.json"
    args = ("grade", "--submission", str(folder), "--results", str(results), *extra)
    proc = run_cli(*args, warm=warm)
    data = json.loads(results.read_text()) if results.exists() else None
    return proc, data


def variants(kind: str) -> list[pytest.param]:
    """Every mutant or alternative file: (module, path), with a readable test id."""
    found = []
    for path in sorted((KIT / kind).glob("*/*.py")):
        found.append(pytest.param(path.parent.name, path, id=f"{path.parent.name}/{path.stem}"))
    return found


def declared_losses(path: Path) -> set[str] | None:
    """The check slugs a mutant must lose, and only those ('# loses: a, b'), if it says."""
    loses = model_replays.header(path, "loses")
    return None if loses is None else {s.strip() for s in loses.split(",") if s.strip()}


def expected_misconception(path: Path) -> str:
    expects = model_replays.header(path, "expects")
    assert expects is not None, f"{path} has no '# expects: <misconception id>' line"
    return expects


# --------------------------------------------------------------------------- make test's units

# `make test` runs the kit's tests on pytest-xdist workers (--dist loadfile); its unit of work
# is a test file, whose module fixtures (such as a whole nbgrader course cycle) are built once,
# but in the files below, whose tests share no module fixture, each test is a unit of its own
# (each chunk of the student copy's mistakes check, each `make dist` test), so that both
# workers can take them. The workers take the units below first, about the longest first
# (the figures: wall seconds of each unit in a clean `make test` on an otherwise idle 2-core
# machine, 2026-12-04, whose two workers then ended 4 s apart after 489 s), then the rest in
# file order: a long unit started last would hold the run's end alone. The first one makes
# `make dist` record the judges' models (minutes, once per tree: the other processes find them
# cached) while the other worker runs the units that need no student copy (the course verbs,
# Gradescope, the channels' one total, PrairieLearn, the nbgrader cycle): a unit that needs
# the copy (the other chunks, test_dist.py, the released notebooks) would wait on the
# recording's lock. test_mutants_and_alternatives.py reads what that recording graded, so it
# comes after units that wait for the copy.
EACH_TEST_A_UNIT = (
    "tests/kit/test_dist.py",
    "tests/kit/test_dist_mistakes.py",
    "tests/kit/test_degenerate.py",
)
_MISTAKES = "tests/kit/test_dist_mistakes.py::test_student_copy_names_every_mistake_the_kit_names"
LONGEST_FIRST = (
    f"{_MISTAKES}[chunk0]",  # with the recording: 86 s
    "tests/kit/test_course_anywhere.py",  # 56 s
    "tests/kit/test_gradescope.py",  # 66 s
    "tests/kit/test_one_total.py",  # 39 s
    "tests/kit/test_prairielearn.py",  # 28 s
    "tests/kit/test_nbgrader.py",  # 82 s
    "tests/kit/test_notebook_release.py",  # 74 s
    "tests/kit/test_batch.py",  # 69 s
    "tests/kit/test_nbgrader_attacks.py",  # 48 s: one course, 8 notebooks
    "tests/kit/test_fresh_inputs.py",  # 24 s
    "tests/kit/test_grading_path.py",  # 36 s
    "tests/kit/test_pytest_first_class.py",  # 13 s
    f"{_MISTAKES}[chunk1]",  # 38 s
    "tests/kit/test_merged_results.py",  # 28 s
    "tests/kit/test_hint_ladder.py",  # 15 s
    "tests/kit/test_batch_regrade.py",  # 13 s
    "tests/kit/test_sandbox_time.py",  # 21 s
    "tests/kit/test_warm.py",  # 20 s
    "tests/kit/test_load.py",  # 14 s
    "tests/kit/test_dist.py::test_new_module_ships_no_working_code",  # 8 s
    f"{_MISTAKES}[chunk3]",
    f"{_MISTAKES}[chunk2]",
    "tests/kit/test_dist.py::test_student_copy_grades_stubs_as_not_attempted",
    "tests/kit/test_single_source.py",
    "tests/kit/test_dist.py::test_a_correct_module_waits_on_a_failing_own_dependency_in_the_"
    "student_copy",
    "tests/kit/test_mutants_and_alternatives.py",
)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collecting imported, frozen; the usual collector for the tests (forkserver.py)."""
    settle()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`make test-fast` (`-m fast`) does not import a test file that marks no test fast: it
    would deselect every test there anyway; importing the 40-odd others (nbformat, the
    channels' helpers, the parametrisations over every variant) cost about 3 of its 42 CPU-s.
    A file with a fast test says `mark.fast` somewhere (a decorator, `pytestmark`, a param's
    marks). Any other marker expression collects everything, as pytest does."""
    if config.getoption("markexpr", "") != "fast" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return "mark.fast" not in collection_path.read_text(encoding="utf-8")


def unit_of(nodeid: str) -> str:
    """The unit of work of make test's scheduler that test `nodeid` belongs to."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in EACH_TEST_A_UNIT else path


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """--dist loadfile, with unit_of's units (xdist's own loadgroup marks do not reach the
    scheduler under pytest 9: they rename a test id pytest 9 no longer reads)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Units(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # only on an xdist worker: the order it reports
        return
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(unit_of(item.nodeid), index)

    def order(item: pytest.Item) -> tuple[int, int]:
        unit = unit_of(item.nodeid)
        return rank.get(unit, len(rank)), first[unit]

    items.sort(key=order)


DIST_LOCK = ROOT / "build" / ".test-dist.lock"


@pytest.fixture(scope="session")
def student_copy_archive(tmp_path_factory) -> Path:
    """The student copy as `make dist` builds it: one build per test process. `make dist`
    writes build/attention-lab-student.tar.gz and records the judges' models once per tree
    (cached in build/model-replays/): the processes of `make test` take turns (a file lock),
    so the second one finds the answers recorded and only packs the copy again."""
    import fcntl

    out = tmp_path_factory.mktemp("dist") / "student.tar.gz"
    DIST_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(DIST_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            subprocess.run(
                ["make", "-s", "dist", f"VENV={ROOT / '.venv'}"],
                cwd=ROOT,
                check=True,
                env={**os.environ, "MAKEFLAGS": ""},
                capture_output=True,
            )
            out.write_bytes((ROOT / "build" / "attention-lab-student.tar.gz").read_bytes())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


def module_notebook(module: str, path: Path, *, solved: bool = True) -> Path:
    """<module>'s notebook as a student would upload it: the course's source notebook
    (course.notebook, what `make release` generates the release from) with its solutions, or
    with them cleared by nbgrader's ClearSolutions, as the release clears them (untouched)."""
    import nbformat
    from nbgrader.preprocessors import ClearSolutions

    from autograder.channels.nbgrader import course

    nb = course.notebook(module)
    if not solved:
        nb, _ = ClearSolutions().preprocess(nb, {})
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
