"""The nbgrader course: source notebooks generated from solutions/, and the instructor's verbs.

`make course` writes an nbgrader course directory (default course/):

    course/nbgrader_config.py        written once, then the instructor's to edit
    course/course.toml               written once: due dates, late policy, point overrides,
                                     the hidden tier's secret (autograder/core/course_config.py)
    course/source/<module>/<module>.ipynb   one assignment per exercise module

Each notebook is built from solutions/<module>.py (the single source) and the optional
teaching text course/text/<module>.md:

    setup cell (locked)      finds the kit (ATTENTION_LAB_ROOT, the notebook's folders, the
                             kernel's sys.path) and imports it, or says what to do
    markdown                 the module docstring and the teaching text
    imports                  the module's imports; `from .attention import x` becomes
                             `from autograder.trusted.attention import x`
    per exercise             markdown, then the solution cell (the def/class with the same
                             ### BEGIN/END SOLUTION region as the .py), then one locked,
                             autograded test cell per Check, carrying its points

A test cell calls autograder.notebook.grade (the same Check, the same engine as `make grade`)
on the public fixture; the hidden tier is `make autograde`'s, judged outside the kernel
(autograder/channels/nbgrader/autograde.py), so the cell holds no hidden tests: the released
cell is the one nbgrader recorded, and its checksum warns only when a student changed it. A
slow check (gpt's training run, `make grade-train`) runs once per grading; an assignment is
worth as many points in nbgrader as under `make grade` plus `make grade-train` (or
course.toml's [points] overrides, in both the cells and the gradebook).

The verbs (release, collect, autograde, feedback, export) are thin wrappers that run
`python -m nbgrader <verb>` in the course directory, once per assignment, with the kit on
PYTHONPATH and this Python's folder first on PATH (the kernel runs this Python). None of them
stops a class: a failure is reported, the other students and assignments go on, and the verb
ends with a summary.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from alembic.script import ScriptDirectory
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader import api as nbgrader_api
from nbgrader.dbutil import ALEMBIC_DIR

from ...core import course_config, registry
from ...core.check import Check
from ...core.paths import COURSE_TEXT as TEXT
from ...core.paths import ROOT, SOLUTIONS
from ...core.settings import CELL_CPU_VAR, HIDDEN_SEED_VAR, HIDDEN_VAR, KIT_ROOT_VAR, Settings
from ...feedback.unicode_math import markdown as unicode_math_markdown
from ...run.submission import trusted_modules
from . import collect as course_collect
from . import export as course_export
from . import records as course_records
from .preprocess import sanitize_preprocessors  # noqa: F401 (nbgrader_config.py of older courses)

if TYPE_CHECKING:  # the grading machinery: imported where a verb grades (autograde, regrade)
    from ...run.limits import TimeLimits
    from .kernel import ConfinedKernels

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = 'raise NotImplementedError("not attempted yet: replace this line with your code")'

SETUP = """\
# Setup (locked): make the Attention Lab kit importable: the folder holding autograder/ and
# assignments/ (the student copy of the kit, `make dist`, or the instructor's). It is looked
# for in $ATTENTION_LAB_ROOT, then in this notebook's folder and the folders above it, then
# where this kernel's Python finds it (PYTHONPATH).
import importlib.util
import os
import sys
from pathlib import Path


def _find_attention_lab():
    \"\"\"(the kit's folder, None) or (None, what to do).\"\"\"

    def kit(folder):
        return (Path(folder) / "autograder" / "notebook.py").is_file()

    given = os.environ.get("ATTENTION_LAB_ROOT", "").strip()
    if given:
        if kit(given):
            return Path(given).resolve(), None
        return None, (
            f"ATTENTION_LAB_ROOT is {given!r}, which holds no autograder/notebook.py: set it to "
            "the kit's folder (the one holding autograder/ and Makefile) and restart the kernel"
        )
    here = [Path.cwd()]  # Jupyter starts the kernel in the notebook's folder
    for where in (globals().get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if where and Path(where).is_absolute() and Path(where).is_file():
            here.insert(0, Path(where).parent)  # VS Code, Jupyter Server: the notebook's path
    for start in here:
        for folder in (start, *start.resolve().parents):
            if kit(folder):
                return folder.resolve(), None
    spec = importlib.util.find_spec("autograder")
    if spec and spec.origin and kit(Path(spec.origin).parents[1]):
        return Path(spec.origin).resolve().parents[1], None
    return None, (
        "Attention Lab's kit was not found: put this notebook inside the kit's folder (the "
        "student copy, attention-lab/, or a folder below it) or set ATTENTION_LAB_ROOT to "
        "the kit's folder, then restart the kernel"
    )


_kit, _problem = _find_attention_lab()
del _find_attention_lab
if _problem:
    raise ModuleNotFoundError(_problem)
if str(_kit) in sys.path:  # the kit first, once: no other copy shadows it
    sys.path.remove(str(_kit))
sys.path.insert(0, str(_kit))
import autograder

if Path(autograder.__file__).resolve().parent != _kit / "autograder":
    raise ImportError(
        f"this kernel already imported the kit from {Path(autograder.__file__).parents[1]}: "
        f"restart the kernel (Kernel -> Restart) to use the one in {_kit}"
    )
# As in the .py exercise, __file__ is the kit's assignments/{module}.py (relative paths work).
__file__ = str(_kit / "assignments" / "{module}.py")
"""

GRADING = """\
**How this notebook is graded.** Write your code in the cells that hold
`raise NotImplementedError(...)`, replacing that line. Each locked cell below an exercise runs
one check, the same one `make grade` runs, and shows its points; when a check fails it names the
likely mistake and gives a hint. Run the notebook top to bottom (*Kernel → Restart & Run All*)
before you submit. Your instructor grades with more checks on inputs you have not seen, so
write code that follows the docstring, not code that fits these checks."""

CONFIG = """\
# nbgrader configuration of the Attention Lab course, written by `make course` when missing.
# It is yours to edit; `make course` never overwrites it.
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "attention-lab"

# The stub left in a solution cell: the same sentence the grader reports ("not attempted").
c.ClearSolutions.code_stub = {{"python": {code_stub!r}}}

# Autograde: put back test cells a student deleted (graded as usual); a duplicated cell keeps
# its grade_id only once (nbgrader's DeduplicateIds). Cells get time for torch's first call.
c.OverwriteCells.add_missing_cells = True
# ... and a cell that DeduplicateIds stripped does not crash add_missing_cells (nbgrader 0.9.6).
# (preprocess.py imports nbgrader only: nbgrader's own processes start without torch)
try:
    from autograder.channels.nbgrader.preprocess import sanitize_preprocessors
except ImportError:  # raw nbgrader, without the kit on PYTHONPATH
    import sys

    sys.path.insert(0, {kit!r})
    from autograder.channels.nbgrader.preprocess import sanitize_preprocessors
c.Autograde.sanitize_preprocessors = sanitize_preprocessors()
c.Execute.timeout = 120
# nbgrader gives zero to a test cell with any stderr output. The checks already move what the
# student's code writes to stderr onto stdout; this also drops warnings raised elsewhere.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\\w+Warning: "

# Collection (`make collect`), due dates, the late policy, point overrides and the hidden
# secret are set in course.toml, next to this file (docs/course.md).
"""


# The CPU seconds each cell of a notebook may use in `make autograde`'s kernel (the sandbox's
# per-check limit): an IPython startup file, in a profile of its own, sets RLIMIT_CPU's soft
# limit before each cell and turns the SIGXCPU into an error of that cell, so an endless loop
# costs seconds, not nbgrader's cell timeout. The kernel's outcome is no grade (autograde.py).
CELL_CPU_LIMIT = """\
# Attention Lab, make autograde: a cell may use so many CPU seconds (course.py, CELL_CPU_LIMIT).
def _attention_lab_cell_cpu_limit():
    import os
    import resource
    import signal

    seconds = float(os.environ.get("CELL_CPU_VAR", "0") or 0)
    if seconds <= 0:
        return
    try:
        from autograder.core.i18n import _
    except ImportError:
        _ = str
    text = _(
        "this cell used more than {seconds:g} CPU seconds (an endless loop?): it was "
        "stopped; the official grade is computed outside this notebook"
    ).format(seconds=seconds)

    def expired(signum, frame):
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))  # once per cell
        raise TimeoutError(text)

    def before(*args):
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime + seconds) + 1
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))

    def after(*args):
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))

    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    signal.signal(signal.SIGXCPU, expired)
    events = get_ipython().events  # noqa: F821 - IPython's startup namespace
    events.register("pre_run_cell", before)
    events.register("post_run_cell", after)


_attention_lab_cell_cpu_limit()
del _attention_lab_cell_cpu_limit
""".replace("CELL_CPU_VAR", CELL_CPU_VAR)


def kernel_profile(folder: Path) -> Path:
    """An IPYTHONDIR whose default profile limits each cell's CPU seconds (CELL_CPU_LIMIT)."""
    startup = Path(folder) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-attention-lab-cell-cpu-limit.py").write_text(CELL_CPU_LIMIT)
    return Path(folder)


# --------------------------------------------------------------------------- notebooks


def _meta(grade_id: str, *, solution=False, grade=False, locked=False, points=None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def _code(source: str, cell_id: str, **meta) -> nbformat.NotebookNode:
    cell = new_code_cell(source.strip("\n"), metadata=_meta(cell_id, **meta) if meta else {})
    cell.id = cell_id
    return cell


def _markdown(source: str, cell_id: str) -> nbformat.NotebookNode:
    cell = new_markdown_cell(source.strip("\n"), metadata=_meta(cell_id, locked=True))
    cell.id = cell_id
    return cell


def teaching_text(module: str, text_dir: Path = TEXT) -> dict[str, str]:
    """course/text/<module>.md split at `<!-- before: name -->` markers: {"": intro, name: text}."""
    path = text_dir / f"{module}.md"
    if not path.is_file():
        return {}
    sections: dict[str, list[str]] = {"": []}
    key = ""
    for line in path.read_text().splitlines():
        marker = re.fullmatch(r"\s*<!--\s*before:\s*(\w+)\s*-->\s*", line)
        if marker:
            key = marker.group(1)
            sections[key] = []
        else:
            sections[key].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def _docstring_markdown(doc: str) -> str:
    """A module docstring as markdown: first line as a heading, the rest as paragraphs."""
    first, _, rest = (doc or "").strip().partition("\n")
    title = re.sub(r"^Exercise group( \d+)?:\s*", "", first.strip()).rstrip(".")
    return f"# Attention Lab: {title}\n\n{textwrap.dedent(rest).strip()}"


def _rewrite_import(node: ast.ImportFrom, indent: str = "") -> str:
    """`from .attention import x, y` -> the trusted stand-in's names, or the student's own
    assignments/attention.py in a copy of the kit without that stand-in (the student copy
    leaves out the stand-ins that are exercises: docs/principles.md, principle 6)."""
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    if not node.module:
        raise ValueError("`from . import module` is not supported in notebooks; import names")
    if node.module not in trusted_modules():
        raise ValueError(
            f"it imports from .{node.module}, which has no trusted stand-in in "
            f"autograder/trusted/{node.module}.py"
        )
    m = node.module
    return (
        f"{indent}try:  # in the .py files: from .{m} import ...\n"
        f"{indent}    from autograder.trusted.{m} import {names}\n"
        f"{indent}except ModuleNotFoundError:  # no stand-in in this copy of the kit: your {m}.py\n"
        f"{indent}    from assignments.{m} import {names}"
    )


_RELATIVE = re.compile(r"^(\s+)from \.\w+ import .*$")


def _rewrite_inner(line: str) -> str:
    """A one-line relative import inside a function, rewritten as at the top."""
    if not _RELATIVE.match(line):
        return line
    node = ast.parse(line.strip()).body[0]
    assert isinstance(node, ast.ImportFrom)
    return _rewrite_import(node, line[: len(line) - len(line.lstrip())])


def _is_main_guard(node: ast.stmt) -> bool:
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _chunks(source: str) -> tuple[str, list[tuple[str, str]]]:
    """(module docstring, [(name or "", code)]): one chunk per top-level def/class, and one per
    run of other statements (imports, constants); comments above a def go with it."""
    tree = ast.parse(source)
    lines = source.splitlines()
    body = tree.body
    doc = ast.get_docstring(tree) or ""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    chunks: list[tuple[str, list[str]]] = []
    previous_end = body[0].lineno - 1 if body else 0
    for node in body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        end = node.end_lineno
        assert end is not None  # ast.parse sets every node's end
        # Indented comments after the last statement (### END SOLUTION) belong to the node.
        while end < len(lines) and lines[end][:1].isspace() and lines[end].strip()[:1] == "#":
            end += 1
        if _is_main_guard(node):
            previous_end = end
            continue
        # Comment lines directly above the node belong to it; blank lines and section rules
        # before them are dropped.
        above = start
        while above > previous_end and lines[above - 1].lstrip().startswith("#"):
            above -= 1
        code = lines[above:end]
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            code = [_rewrite_import(node)]
        else:  # a relative import inside a function
            code = [_rewrite_inner(ln) for ln in code]
        code = [ln for ln in code if not re.fullmatch(r"#\s*-{10,}.*", ln.strip())]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            chunks.append((node.name, code))
        elif chunks and chunks[-1][0] == "":
            gap = lines[previous_end:above]  # keep one blank line where the source has one
            chunks[-1][1].extend(([""] if any(not g.strip() for g in gap) else []) + code)
        else:
            chunks.append(("", code))
        previous_end = end
    return doc, [(name, "\n".join(code)) for name, code in chunks]


def _exercise_owner(check: Check, chunks: list[tuple[str, str]]) -> str:
    """The def/class chunk whose solution region the check grades (a method: its class)."""
    for name, _code in chunks:
        if name and check.exercise == name:
            return name
    for name, code in chunks:
        if name and BEGIN in code and re.search(rf"\bdef {re.escape(check.exercise)}\b", code):
            return name
    return ""


def test_source(check: Check) -> str:
    """The test cell of one check: the public tier, in the student's kernel, for their own
    feedback. The hidden tier is `make autograde`'s, outside the kernel (autograde.py): no
    hidden tests in the cell, so the released cell is the cell nbgrader recorded (its
    checksum holds, and a warning about a test cell means a student changed it). A slow
    check (the training run) runs once per grading: under `make autograde` outside the kernel
    only (autograder/notebook.py)."""
    return (
        f'# {check.name}\nfrom autograder.notebook import grade\n\ngrade("{check.id}", globals())'
    )


def graded_checks(module: str) -> list[Check]:
    """The checks of an assignment: all of them, the slow one (gpt's training run, which
    `make grade` leaves to `make grade-train`) included."""
    return registry.checks_of(module)


def notebook(
    module: str,
    solutions: Path = SOLUTIONS,
    text_dir: Path = TEXT,
    points: dict[str, float] | None = None,
):
    """The source notebook of one exercise module, from solutions/<module>.py; `points`
    overrides checks' points by id (course.toml's [points])."""
    source = (solutions / f"{module}.py").read_text()
    doc, chunks = _chunks(source)
    text = teaching_text(module, text_dir)
    module_checks = graded_checks(module)
    points = points or {}
    owners = {c.id: _exercise_owner(c, chunks) for c in module_checks}

    cells = [
        _code(SETUP.replace("{module}", module), "setup", locked=True),
        _markdown(_docstring_markdown(doc), "intro"),
    ]
    if text.get(""):
        cells.append(_markdown(text[""], "intro-text"))
    cells.append(_markdown(GRADING, "grading"))

    def tests_of(owner: str):
        for check in module_checks:
            if owners[check.id] == owner:
                cells.append(
                    _code(
                        test_source(check),
                        f"test-{check.slug}",
                        grade=True,
                        locked=True,
                        points=points.get(check.id, check.points),
                    )
                )

    for index, (name, code) in enumerate(chunks):
        if not name:
            # Imports and constants: an ordinary cell, so students may add imports.
            cell = new_code_cell(code.strip("\n"))
            cell.id = f"code-{index}"
            cells.append(cell)
            continue
        words = text.get(name) or _default_text(name, code)
        cells.append(_markdown(words, f"text-{name}"))
        if BEGIN in code:
            cells.append(_code(code, name, solution=True))
            tests_of(name)
        else:
            cells.append(_code(code, name, locked=True))
    tests_of("")  # checks that name no exercise of this file go last

    nb = new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        },
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    return nb


def _default_text(name: str, code: str) -> str:
    """Markdown for an exercise without teaching text: its name and docstring summary."""
    summary = ""
    try:
        node = ast.parse(textwrap.dedent(code)).body[-1]
    except (SyntaxError, IndexError):
        pass
    else:  # the last def or class (a chunk may end with other code: it has no docstring)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            summary = (ast.get_docstring(node) or "").split("\n\n")[0]
    return f"## `{name}`\n\n{summary}".strip()


# --------------------------------------------------------------------------- the course


def course_modules(modules: list[str] | None = None, solutions: Path = SOLUTIONS) -> list[str]:
    """Exercise modules with checks and a solution file, in course order."""
    known = [m for m in registry.modules() if (solutions / f"{m}.py").is_file()]
    return _chosen(known, modules, "exercise module")


def write_course(
    root: Path, modules: list[str] | None = None, solutions: Path = SOLUTIONS
) -> list[Path]:
    """Write source/<m>/<m>.ipynb for each module, and nbgrader_config.py and course.toml
    when they are missing (they are the instructor's to edit)."""
    root = Path(root)
    (root / "source").mkdir(parents=True, exist_ok=True)
    config = root / "nbgrader_config.py"
    if not config.is_file():
        config.write_text(CONFIG.format(code_stub=CODE_STUB, kit=str(ROOT)))
    wanted = course_modules(modules, solutions)
    course_config.write(root, course_modules(None, solutions))
    points = course_config.load(root).points
    written = []
    for module in wanted:
        nb = notebook(module, solutions, points=points)
        path = root / "source" / module / f"{module}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb) + "\n")
        written.append(path)
    return written


def assignments(root: Path, wanted: list[str] | None = None) -> list[str]:
    """The assignments in root/source, in course order (or `wanted`, checked)."""
    found = sorted(p.name for p in (Path(root) / "source").glob("*") if p.is_dir())
    order = {m: i for i, m in enumerate(registry.modules())}
    found.sort(key=lambda a: (order.get(a, len(order)), a))
    if not found:
        raise FileNotFoundError(f"{root}/source holds no assignment: run `make course` first")
    return _chosen(found, wanted, "assignment")


def _chosen(known: list[str], wanted: list[str] | None, what: str) -> list[str]:
    """`wanted` (all when empty) in the order of `known`; an unknown name is a ValueError."""
    unknown = [w for w in wanted or [] if w not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown[0]!r}; expected one of {known}")
    return [k for k in known if k in wanted] if wanted else known


def tools_path(path: str | None) -> str:
    """PATH with this Python's bin folder (the venv's: nbgrader, jupyter, alembic) first, for
    the tools nbgrader and its API start by name, however the kit was started (make, a
    script, a shell without the venv activated)."""
    bin_dir = str(Path(sys.executable).parent)
    rest = [p for p in (path or "").split(os.pathsep) if p and p != bin_dir]
    return os.pathsep.join([bin_dir, *rest])


def use_tools_path() -> None:
    """This process's PATH as tools_path says: nbgrader's API, used in this process
    (Gradebook), starts `alembic` by name."""
    os.environ["PATH"] = tools_path(os.environ.get("PATH"))


def ensure_gradebook(root: Path) -> Path:
    """root/gradebook.db, created here when missing, stamped with nbgrader's schema version
    from alembic's Python API: nbgrader would otherwise run the `alembic` console script to
    learn it, and a console script fails where the venv was moved or copied (its #! line
    names the old interpreter) or its bin folder is not on PATH."""
    db = Path(root).resolve() / "gradebook.db"
    if db.exists():
        return db
    head = ScriptDirectory(ALEMBIC_DIR).get_current_head()
    asked = nbgrader_api.get_alembic_version
    nbgrader_api.get_alembic_version = lambda: head  # type: ignore[assignment]
    try:
        with nbgrader_api.Gradebook(f"sqlite:///{db}", course_records.COURSE_ID):
            pass
    finally:
        nbgrader_api.get_alembic_version = asked  # type: ignore[assignment]
    return db


def kernel_env(root: Path) -> dict[str, str]:
    """The environment of nbgrader and its kernels: the kit importable (and the notebooks'
    setup cell pointed at it, whatever ATTENTION_LAB_ROOT the shell had), this Python's bin
    folder first on PATH (tools_path), and no hidden seed (the hidden tier is judged outside
    the kernel)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env[KIT_ROOT_VAR] = str(ROOT)
    env["PATH"] = tools_path(env.get("PATH"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop(HIDDEN_SEED_VAR, None)
    env[HIDDEN_VAR] = "outside"
    return env


# nbgrader's log lines worth showing an instructor (the rest is progress chatter), and the
# line that says which submission it is working on.
_SHOWN = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback|Error:")
_NOISE = re.compile(r"Kernel is running over TCP without encryption")
_WORKING_ON = re.compile(r"(?:submitted|autograded|feedback)/([^/\s]+)/")


def nbgrader_warnings(log: str) -> list[str]:
    """nbgrader's warnings and errors, once each, each with the student it concerns."""
    shown, student = [], ""
    for line in log.splitlines():
        working = _WORKING_ON.search(line)
        if working and "| INFO]" in line:
            student = working.group(1)
        if _SHOWN.search(line) and not _NOISE.search(line):
            text = re.sub(r"^\[\w+ \| (\w+)\]", r"\1", line.strip())
            shown.append(f"{student}: {text}" if student else text)
    return list(dict.fromkeys(shown))


# `python -m nbgrader`, started as the kit starts its own interpreters (forkserver.quiet_start):
# it imports Jupyter, nbconvert and SQLAlchemy, and a quarter of its CPU went to collecting
# them over and over. It runs no notebook code itself (its kernels do, confined).
_NBGRADER_MAIN = (
    "from autograder.run.forkserver import quiet_start; quiet_start(); import runpy; "
    "runpy.run_module('nbgrader', run_name='__main__', alter_sys=True)"
)


def nbgrader(
    root: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m nbgrader <args>` in the course directory (`env`: more variables); its
    warnings and errors shown."""
    root = Path(root).resolve()
    ensure_gradebook(root)
    cmd = [sys.executable, "-c", _NBGRADER_MAIN, *args, f"--CourseDirectory.root={root}"]
    print("$ nbgrader " + " ".join(args), flush=True)
    environ = {**kernel_env(root), **(env or {})}
    proc = subprocess.run(cmd, cwd=root, env=environ, text=True, capture_output=True)
    shown = nbgrader_warnings(proc.stdout + proc.stderr)
    for line in shown[:40]:
        print(f"  nbgrader: {line}", flush=True)
    if len(shown) > 40:
        print(f"  nbgrader: ... {len(shown) - 40} more warning lines", flush=True)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return proc


def release(root: Path, wanted: list[str] | None = None) -> None:
    for a in assignments(root, wanted):
        nbgrader(root, "generate_assignment", a, "--force")


def collect(root: Path, wanted: list[str] | None = None) -> list:
    """Downloads -> submitted/ (autograder/channels/nbgrader/collect.py); prints the report."""
    config = course_config.load(root)
    items = course_collect.collect(root, config, assignments(root, wanted))
    print(course_collect.report_text(items), end="")
    print(f"(report: {Path(root) / (course_collect.REPORT + '.txt')})")
    return items


def submitted_students(root: Path, assignment: str) -> list[str]:
    return sorted(p.parent.name for p in (Path(root) / "submitted").glob(f"*/{assignment}"))


def autograde(
    root: Path,
    wanted: list[str] | None = None,
    students: list[str] | None = None,
    settings: Settings | None = None,
) -> dict:
    """nbgrader autograde each assignment (the kernel: public tests, feedback), then judge every
    notebook outside the kernel and write the gradebook. Never stops at one failure; returns
    and prints a summary. `settings`: the run's (the sandbox's mode and limits)."""
    # The grading machinery (the sandbox, torch) only here and in regrade: the course verbs
    # that grade nothing (release, collect, feedback, export) start without it.
    from ...run.limits import TimeLimits
    from . import kernel as course_kernel

    root = Path(root)
    config = course_config.load(root)
    summary: dict[str, list[str]] = {"graded": [], "failed": [], "skipped": [], "warnings": []}
    # Each kernel cell's CPU seconds: the one rule of every channel (TimeLimits.of), at its
    # largest over the assignment's fast checks (a cell runs the student's code as one does).
    limits = TimeLimits.of(settings or Settings())
    for item in course_collect.read_report(root):
        if item.action in ("skipped", "superseded"):
            summary["skipped"].append(f"{item.source}: {item.action}, {item.why}")
    # The kernels run confined, by the sandbox's jail (kernel.py); refused (SandboxUnavailable)
    # where the machine cannot confine them, unless the run's settings say insecure.
    with course_kernel.ConfinedKernels(root, settings) as kernels:
        summary["kernels"] = [kernels.summary()]
        print(kernels.summary(), flush=True)
        _autograde(root, config, summary, kernels, limits, wanted, students, settings)
    print_summary(summary)
    return summary


def _autograde(
    root: Path,
    config: course_config.CourseConfig,
    summary: dict[str, list[str]],
    kernels: ConfinedKernels,
    limits: TimeLimits,
    wanted: list[str] | None,
    students: list[str] | None,
    settings: Settings | None,
) -> None:
    from . import autograde as course_judge

    for a in assignments(root, wanted):
        who = [s for s in submitted_students(root, a) if not students or s in students]
        if not who:
            continue
        if students:  # a regrade: nbgrader takes one student (a glob) per run
            runs = [["autograde", a, "--create", "--force", f"--student={s}"] for s in who]
        else:
            runs = [["autograde", a, "--create", "--force"]]
        checks = [c for c in registry.checks_of(a) if not c.slow] or registry.checks_of(a)
        cpu = f"{max((limits.cpu_limit(c) for c in checks), default=20.0):g}"
        with tempfile.TemporaryDirectory(prefix="attention-lab-ipython-") as ipython:
            env = {"IPYTHONDIR": str(kernel_profile(Path(ipython))), CELL_CPU_VAR: cpu}
            env, confined = kernels.prepare(a, env)
            procs = [nbgrader(root, *args, *confined, check=False, env=env) for args in runs]
        for proc in procs:  # a checksum warning: a student changed a locked cell
            summary["warnings"] += nbgrader_warnings(proc.stdout + proc.stderr)
        if any(proc.returncode for proc in procs):
            print(f"  nbgrader autograde {a} reported errors; the others go on", flush=True)
        try:
            judged = course_judge.judge_assignment(root, config, a, who, settings=settings)
            course_judge.record(root, config, judged)
        except Exception as e:  # noqa: BLE001 - one assignment's failure never stops the class
            summary["failed"].append(f"{a}: not judged ({type(e).__name__}: {e})")
            try:
                course_judge.withhold(root, a, who, f"not judged ({type(e).__name__}: {e})")
            except Exception as e2:  # noqa: BLE001
                summary["failed"].append(f"{a}: scores not withheld ({type(e2).__name__}: {e2})")
            continue
        for one in judged:
            if one.results:
                late = f", late penalty {one.penalty:g}" if one.penalty else ""
                summary["graded"].append(
                    f"{one.student} / {a}: {one.score:g} / {one.max_score:g}{late}"
                )
            else:
                summary["failed"].append(f"{one.student} / {a}: {'; '.join(one.notes)}")


def print_summary(summary: dict) -> None:
    print(
        f"autograde summary: {len(summary['graded'])} notebooks graded, "
        f"{len(summary['failed'])} not graded, {len(summary['skipped'])} downloads skipped"
    )
    for key, title in (("graded", "graded"), ("failed", "NOT GRADED"), ("skipped", "skipped")):
        for line in summary[key]:
            print(f"  {title}: {line}")


FEEDBACK_TEMPLATES = Path(__file__).resolve().parent / "feedback_template"


def feedback_args() -> list[str]:
    """nbgrader's feedback with the kit's template
    (autograder/channels/nbgrader/feedback_template/): check names
    in the score list, messages without kit tracebacks, wrapped lines, no CDN MathJax."""
    return [
        "--HTMLExporter.template_name=attention_lab_feedback",
        f"--HTMLExporter.extra_template_basedirs={FEEDBACK_TEMPLATES}",
    ]


def unicode_math(notebook_path: Path) -> None:
    """Turn the LaTeX of a notebook's markdown cells into Unicode (feedback reads offline)."""
    nb = nbformat.read(notebook_path, as_version=4)
    changed = False
    for c in nb.cells:
        if c.cell_type == "markdown" and "$" in c.source:
            c.source, changed = unicode_math_markdown(c.source), True
    if changed:
        nbformat.write(nb, notebook_path)


def feedback(root: Path, wanted: list[str] | None = None) -> None:
    for a in assignments(root, wanted):
        graded = sorted((Path(root) / "autograded").glob(f"*/{a}/*.ipynb"))
        if graded:
            for path in graded:
                unicode_math(path)
            nbgrader(root, "generate_feedback", a, "--force", *feedback_args(), check=False)


def export(root: Path, out: Path | None = None) -> Path:
    """course/grades.csv from the gradebook: one row per student and assignment, with a status
    column, so "missing" is told from a score of 0, and a stale column (what course.toml
    changed since the grade was computed); canvas.csv beside it, with the roster's ids
    (nbgrader's own CSV: nbgrader-grades.csv)."""
    root = Path(root)
    out = Path(out or root / "grades.csv").resolve()
    nbgrader(root, "export", f"--to={out.with_name('nbgrader-grades.csv')}", check=False)
    table = course_export.rows(root)
    course_export.write_grades(root, out, table)
    canvas = course_export.write_canvas(root, out.with_name("canvas.csv"), table)
    print(f"wrote {canvas} (Canvas's gradebook import)")
    summary = course_export.stale_summary(table)
    if summary:
        print(summary)
    return out


def regrade_all(
    root: Path, wanted: list[str] | None = None, settings: Settings | None = None
) -> dict:
    """`make regrade ALL=1`: the current course.toml applied to every graded notebook. The
    late penalty and the totals are computed again from the stored results (records.py)
    when the notebook and the hidden seed are the ones graded; the others (a changed or new
    notebook, a new secret, no stored results) are autograded again, sandbox included."""
    from . import autograde as course_judge  # (the sandbox, torch: see autograde)

    root = Path(root)
    config = course_config.load(root)
    summary: dict[str, list[str]] = {"reapplied": [], "rerun": []}
    for a in assignments(root, wanted):
        again: list[str] = []
        reuse: list[course_judge.Judged] = []
        for student in submitted_students(root, a):
            record = course_records.read(root, student, a)
            why = course_records.must_rerun(record, root, config, student, a)
            if why or record is None:
                again.append(student)
                summary["rerun"].append(f"{student} / {a}: {why}")
                continue
            seed = config.seed(student, a)
            results = course_records.results(record)
            reuse.append(course_judge.Judged(student, a, seed, results=results))
        course_judge.record(root, config, reuse)
        for one in reuse:
            late = f", late penalty {one.penalty:g}" if one.penalty else ""
            summary["reapplied"].append(
                f"{one.student} / {a}: {one.score:g} / {one.max_score:g}{late}"
            )
        if again:
            autograde(root, [a], students=again, settings=settings)
    print(
        f"regrade ALL: {len(summary['reapplied'])} grades computed again from their stored "
        f"results under the current {course_config.FILE}, {len(summary['rerun'])} graded "
        "again in the sandbox"
    )
    for key, title in (("reapplied", "recomputed"), ("rerun", "graded again")):
        for line in summary[key]:
            print(f"  {title}: {line}")
    return summary
