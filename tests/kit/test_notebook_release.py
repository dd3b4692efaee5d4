"""The released notebooks where students open them (DESIGN.md, principle 12).

Each module's notebook as nbgrader releases it (`make course`, then nbgrader's own
generate_assignment with the course's nbgrader_config.py: solution regions cleared, hidden
tests gone) is executed with nbclient in a fresh kernel of this Python, whose working folder
is outside the kit and whose environment has no PYTHONPATH, so only the locked setup cell can
make the kit importable:

- with ATTENTION_LAB_ROOT set to the kit: the untouched release runs to the end, every test
  cell saying "not attempted" and no other cell failing; then, in the same kernel, as a student
  fills in the cells and runs them all again without restarting, the same notebook with its
  solution cells filled in (from the source notebook, i.e. solutions/) gets full marks;
- inside an unpacked student copy (`make dist`), without ATTENTION_LAB_ROOT:
  the same on two notebooks (multihead, graded with a stand-in the copy has; gpt, which
  imports the student's own blocks.py and positional.py where the copy has no stand-in, and
  reads data/corpus.txt through the cell's __file__);
- nowhere to find the kit: the setup cell fails with one sentence that says what to do.

The setup cell's search itself (ATTENTION_LAB_ROOT, the notebook's folders, the kernel's
environment, a kit both installed and in the folders, a second run) is tested without a
kernel, by executing the cell's text in a fresh Python.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from autograder import notebook
from autograder.channels.nbgrader import course
from autograder.core import fixtures, registry

# Run in the unpacked student copy (a kernel start each, so two): one graded with a stand-in
# the copy has, and gpt (the student's own modules stand in; the corpus is read).
IN_STUDENT_COPY = ["multihead", "gpt"]
KERNEL = "attention-lab-release-test"
# What a kernel must not inherit: the Makefile's PYTHONPATH, the kit's location, the
# instructor's hidden seed and autograde's switch.
STRIPPED = ("PYTHONPATH", "ATTENTION_LAB_ROOT", notebook.SEED_VARIABLE, notebook.HIDDEN_VARIABLE)
PASS = re.compile(r"^PASS  (?P<name>.+): (?P<score>[\d.]+) / (?P<points>[\d.]+) points$", re.M)
CHECK_ID = re.compile(r'grade\("([^"]+)", globals\(\)\)')


def _fixtures_fresh(module: str) -> bool:
    try:
        meta = fixtures.manifest(module)
    except OSError:
        return False
    return {k: meta.get(k) for k in ("solution_sha256", "checks_sha256")} == (
        fixtures.source_hashes(module)
    )


def released_modules() -> list[str]:
    """Every module with a notebook, except one in progress (stale fixtures), as
    test_nbgrader.py's source notebook test skips it."""
    return [m for m in course.course_modules() if _fixtures_fresh(m)]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the kernel imports the kit: leave no bytecode in it
    return {**env, **extra}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A course whose release/ holds every module's notebook as nbgrader releases it.

    The same nbgrader app and nbgrader_config.py as `make release`, in this process: one
    Python for all assignments instead of one per assignment (minutes on 2 cores)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    root = tmp_path_factory.mktemp("course")
    course.write_course(root, released_modules())
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    saved = os.environ["PATH"]
    os.environ["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), saved))  # alembic
    try:
        api = NbGraderAPI(config=config)
        for module in course.assignments(root):
            result = api.generate_assignment(module, force=True)
            assert result["success"], result.get("error", "") + result.get("log", "")
    finally:
        os.environ["PATH"] = saved
    return root


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    """A kernel spec that runs this Python (the kit's .venv), whatever `python3` means on the
    machine's Jupyter path."""
    folder = tmp_path_factory.mktemp("kernels")
    spec = folder / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Attention Lab test", "language": "python"})
    )
    return folder


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory, student_copy_archive) -> Path:
    """The unpacked student copy (`make dist`, conftest.py: built once per test process),
    whose assignments/ hold the student's finished .py files (the gpt notebook imports the
    student's own blocks.py and positional.py there)."""
    folder = tmp_path_factory.mktemp("student")
    with tarfile.open(student_copy_archive) as tar:
        tar.extractall(folder, filter="data")
    copy = folder / "attention-lab"
    assert not (copy / "solutions").exists() and (copy / "data" / "corpus.txt").is_file()
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copy(path, copy / "assignments" / path.name)
    return copy


# --------------------------------------------------------------------------- helpers


def filled(root: Path, module: str):
    """The released notebook with every solution cell filled in from the source notebook."""
    release = nbformat.read(root / "release" / module / f"{module}.ipynb", as_version=4)
    source = nbformat.read(root / "source" / module / f"{module}.ipynb", as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    for c in release.cells:
        meta = c.metadata.get("nbgrader", {})
        if meta.get("solution"):
            c.source = answers[meta["grade_id"]]
    return release


def execute(nb, kernels: Path, cwd: Path, env: dict[str, str]):
    """Run every cell in a fresh kernel started in `cwd` with exactly `env`; a last cell
    (added here) reports which kit the notebook imported and its __file__."""
    (ran,) = execute_in_turn([nb], kernels, cwd, env)
    return ran


def execute_in_turn(notebooks: list, kernels: Path, cwd: Path, env: dict[str, str]) -> list:
    """Run the notebooks one after the other in one fresh kernel started in `cwd` with exactly
    `env`, every cell of each, as a student runs all cells of the untouched release, fills in
    the solution cells and runs all cells again without restarting; returns each notebook
    with its outputs, each ending with a cell (added here) that reports which kit it imported
    and its __file__."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    assert not cwd.resolve().is_relative_to(ROOT), cwd
    report = (
        "import autograder as _kit\n"
        "print('KIT', Path(_kit.__file__).resolve().parents[1])\nprint('FILE', __file__)"
    )
    combined, counts = nbformat.v4.new_notebook(), []
    combined.metadata = notebooks[0].metadata
    for turn, nb in enumerate(notebooks):
        nb.cells.append(nbformat.v4.new_code_cell(report))
        for c in nb.cells:
            c = copy.deepcopy(c)
            if "id" in c:  # each cell id once in the notebook that runs
                c.id = f"t{turn}-{c.id}"[:64]
            combined.cells.append(c)
        counts.append(len(nb.cells))
    km = AsyncKernelManager(
        kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)])
    )
    client = NotebookClient(
        combined, km=km, timeout=600, allow_errors=True, shutdown_kernel="immediate"
    )
    # cleanup_kc: a client given its kernel manager leaves the kernel running (each would
    # hold torch and the kit until the test process ends)
    client.execute(cwd=str(cwd), env=env, cleanup_kc=True)
    start = 0
    for nb, count in zip(notebooks, counts, strict=True):
        for c, ran in zip(nb.cells, combined.cells[start : start + count], strict=True):
            if c.cell_type == "code":
                c.outputs = ran.outputs
        start += count
    return notebooks


def errors(c) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in c.get("outputs", []) if o.output_type == "error"]


def text(c) -> str:
    return "".join(o.get("text", "") for o in c.get("outputs", []) if o.output_type == "stream")


def graded_cells(nb):
    """[(check, cell)] for the autograded test cells of a released notebook."""
    found = []
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code":
            (check_id,) = CHECK_ID.findall(c.source)
            found.append((registry.find(check_id), c))
    return found


def assert_used_kit(nb, kit: Path, module: str) -> None:
    out = text(nb.cells[-1])
    assert f"KIT {kit.resolve()}\n" in out, out
    assert f"FILE {kit.resolve() / 'assignments' / f'{module}.py'}\n" in out, out


def assert_not_attempted(nb, module: str) -> None:
    """The untouched release: no cell fails but the test cells, each "not attempted"."""
    tests = graded_cells(nb)
    assert {check.id for check, _ in tests} == {c.id for c in course.graded_checks(module)}
    test_ids = {id(c) for _, c in tests}
    for c in nb.cells:
        if c.cell_type == "code" and id(c) not in test_ids:
            assert not errors(c), (c.source[:200], errors(c))
    for check, c in tests:
        (error,) = errors(c)
        first = error.splitlines()[0]
        assert first.startswith("CheckFailed: ") and first.endswith(": not attempted."), (
            check.id,
            error,
        )


def assert_full_marks(nb, module: str) -> None:
    """The solutions: every cell runs, every test cell prints its PASS line, full points."""
    for c in nb.cells:
        assert not errors(c), (c.source[:200], errors(c), text(c)[-2000:])
    got, total = 0.0, 0.0
    for check, c in graded_cells(nb):
        points = c.metadata["nbgrader"]["points"]
        passed = [m for m in PASS.finditer(text(c)) if m["name"] == check.name]
        assert len(passed) == 1, (check.id, text(c))
        assert float(passed[0]["score"]) == float(passed[0]["points"]) == points, check.id
        got, total = got + float(passed[0]["score"]), total + points
    assert got == total == sum(c.points for c in course.graded_checks(module)) > 0


# --------------------------------------------------------------------------- the kernels


@pytest.mark.parametrize("module", released_modules())
def test_released_notebook_runs_outside_the_kit(module, released, kernels, tmp_path):
    """ATTENTION_LAB_ROOT set to the kit, the kernel in a folder outside it, no PYTHONPATH."""
    env = clean_env(ATTENTION_LAB_ROOT=str(ROOT))
    path = released / "release" / module / f"{module}.ipynb"
    untouched = nbformat.read(path, as_version=4)
    stub, answered = execute_in_turn([untouched, filled(released, module)], kernels, tmp_path, env)
    assert_not_attempted(stub, module)
    assert_used_kit(stub, ROOT, module)
    assert_full_marks(answered, module)
    assert_used_kit(answered, ROOT, module)


@pytest.mark.parametrize("module", IN_STUDENT_COPY)
def test_released_notebook_runs_inside_the_student_copy(module, released, kernels, student_copy):
    """The notebook in a folder of the unpacked student copy, no ATTENTION_LAB_ROOT, no
    PYTHONPATH: the setup cell finds the copy above the notebook's folder."""
    if module not in released_modules():
        pytest.skip(f"{module}: its fixtures are missing or stale (module in progress)")
    folder = student_copy / "notebooks" / module
    folder.mkdir(parents=True)
    shutil.copy(released / "release" / module / f"{module}.ipynb", folder)
    env = clean_env()
    untouched = nbformat.read(folder / f"{module}.ipynb", as_version=4)
    stub, answered = execute_in_turn([untouched, filled(released, module)], kernels, folder, env)
    assert_not_attempted(stub, module)
    assert_used_kit(stub, student_copy, module)
    assert_full_marks(answered, module)
    assert_used_kit(answered, student_copy, module)


def test_setup_cell_without_a_kit_says_what_to_do(released, kernels, tmp_path):
    nb = nbformat.read(released / "release" / "attention" / "attention.ipynb", as_version=4)
    nb.cells = nb.cells[:1]
    out = execute(nb, kernels, tmp_path, clean_env())
    (error,) = errors(out.cells[0])
    assert error == f"ModuleNotFoundError: {NOT_FOUND}"
    traceback = "\n".join(line for o in out.cells[0].outputs for line in o.get("traceback", []))
    assert "During handling" not in traceback and "KeyError" not in traceback


# --------------------------------------------------------------------------- the cell itself

NOT_FOUND = (
    "Attention Lab's kit was not found: put this notebook inside the kit's folder (the "
    "student copy, attention-lab/, or a folder below it) or set ATTENTION_LAB_ROOT to the "
    "kit's folder, then restart the kernel"
)
# Executes the setup cell's text as a kernel would, once per run given (each run with its own
# changes to the environment), in a namespace that may hold names a front end sets; then says
# what it found.
RUN_CELL = """
import json, os, sys
cell = open(sys.argv[1]).read()
namespace = {"__name__": "__main__", **json.loads(sys.argv[3])}
try:
    for changes in json.loads(sys.argv[2]):
        os.environ.update(changes)
        exec(compile(cell, "<setup cell>", "exec"), namespace)
except ImportError as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e),
                      "chained": e.__context__ is not None}))
else:
    import autograder, assignments
    print(json.dumps({"kit": str(namespace["_kit"]), "autograder": autograder.__file__,
                      "assignments": assignments.__file__, "file": namespace["__file__"],
                      "path_count": sys.path.count(str(namespace["_kit"]))}))
"""


def fake_kit(folder: Path) -> Path:
    """A folder laid out as the kit (autograder/notebook.py, assignments/): a second copy."""
    for package in ("autograder", "assignments"):
        (folder / package).mkdir(parents=True)
        (folder / package / "__init__.py").write_text("")
    (folder / "autograder" / "notebook.py").write_text("")
    return folder


def run_setup(
    tmp_path: Path,
    cwd: Path,
    env: dict[str, str],
    runs: list[dict[str, str]] | None = None,
    namespace: dict[str, str] | None = None,
    **extra: str,
) -> dict:
    """The setup cell run in a fresh Python started in `cwd` with `env` and `extra`."""
    cell = tmp_path / "setup_cell.py"
    cell.write_text(course.SETUP.replace("{module}", "attention"))
    runs, namespace = json.dumps(runs or [{}]), json.dumps(namespace or {})
    proc = subprocess.run(
        [sys.executable, "-c", RUN_CELL, str(cell), runs, namespace],
        cwd=cwd,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_setup_cell_finds_the_kit_where_it_is_documented(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    copy = fake_kit(tmp_path / "attention-lab")
    below = copy / "notebooks" / "attention"
    below.mkdir(parents=True)
    bare = clean_env()
    # (a) ATTENTION_LAB_ROOT, from a folder outside any kit
    found = run_setup(tmp_path, outside, bare, ATTENTION_LAB_ROOT=str(ROOT))
    assert found["kit"] == str(ROOT)
    assert found["autograder"] == str(ROOT / "autograder" / "__init__.py")
    assert found["file"] == str(ROOT / "assignments" / "attention.py")
    # (b, c) a folder below the kit's root (the release folder, a folder in the student copy)
    found = run_setup(tmp_path, below, bare)
    assert found["kit"] == str(copy.resolve())
    assert found["assignments"] == str(copy.resolve() / "assignments" / "__init__.py")
    assert found["file"] == str(copy.resolve() / "assignments" / "attention.py")
    # (d) only the kernel's environment knows it (PYTHONPATH, a .pth file)
    found = run_setup(tmp_path, outside, bare, PYTHONPATH=str(ROOT))
    assert found["kit"] == str(ROOT)
    # VS Code and Jupyter Server say where the notebook is, wherever the kernel starts.
    ipynb = below / "attention.ipynb"
    ipynb.write_text("{}")
    found = run_setup(tmp_path, outside, bare, namespace={"__vsc_ipynb_file__": str(ipynb)})
    assert found["kit"] == str(copy.resolve())
    found = run_setup(tmp_path, outside, bare, JPY_SESSION_NAME=str(ipynb))
    assert found["kit"] == str(copy.resolve())


def test_setup_cell_uses_one_kit_when_two_are_reachable(tmp_path):
    copy = fake_kit(tmp_path / "attention-lab")
    below = copy / "notebooks"
    below.mkdir()
    # The kit the notebook sits in wins over one on PYTHONPATH: autograder and assignments both
    # come from it, nothing of the other copy is mixed in.
    found = run_setup(tmp_path, below, clean_env(), PYTHONPATH=str(ROOT))
    assert found["kit"] == str(copy.resolve())
    assert found["autograder"] == str(copy.resolve() / "autograder" / "__init__.py")
    assert found["assignments"] == str(copy.resolve() / "assignments" / "__init__.py")
    # ATTENTION_LAB_ROOT, set on purpose, wins over both.
    found = run_setup(
        tmp_path, below, clean_env(), PYTHONPATH=str(copy), ATTENTION_LAB_ROOT=str(ROOT)
    )
    assert found["autograder"] == str(ROOT / "autograder" / "__init__.py")
    assert found["assignments"] == str(ROOT / "assignments" / "__init__.py")
    # Run twice (Restart & Run All is not the only way): the kit is on sys.path once.
    found = run_setup(tmp_path, below, clean_env(), runs=[{}, {}], PYTHONPATH=str(ROOT))
    assert found["path_count"] == 1 and found["kit"] == str(copy.resolve())
    # Pointed at another kit after the kernel imported one: restart, says the cell.
    runs = [{"ATTENTION_LAB_ROOT": str(ROOT)}, {"ATTENTION_LAB_ROOT": str(copy)}]
    found = run_setup(tmp_path, below, clean_env(), runs=runs)
    assert found["error"] == "ImportError" and not found["chained"]
    assert found["message"] == (
        f"this kernel already imported the kit from {ROOT}: restart the kernel "
        f"(Kernel -> Restart) to use the one in {copy.resolve()}"
    )


def test_setup_cell_errors_are_one_sentence(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    found = run_setup(tmp_path, outside, clean_env())
    assert found == {"error": "ModuleNotFoundError", "message": NOT_FOUND, "chained": False}
    # An `autograder` that is not the kit (another package of that name) is not taken for it.
    other = tmp_path / "other"
    (other / "autograder").mkdir(parents=True)
    (other / "autograder" / "__init__.py").write_text("")
    assert run_setup(tmp_path, outside, clean_env(), PYTHONPATH=str(other)) == found
    wrong = run_setup(tmp_path, outside, clean_env(), ATTENTION_LAB_ROOT=str(outside))
    assert wrong["error"] == "ModuleNotFoundError" and not wrong["chained"]
    assert wrong["message"] == (
        f"ATTENTION_LAB_ROOT is {str(outside)!r}, which holds no autograder/notebook.py: set it "
        "to the kit's folder (the one holding autograder/ and Makefile) and restart the kernel"
    )
