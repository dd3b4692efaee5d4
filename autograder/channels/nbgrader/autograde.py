"""Judge nbgrader submissions outside the student's kernel (`make autograde`).

nbgrader runs a submitted notebook in a kernel where the student's code and the test cells
share one namespace: a solution cell can patch anything the test cells call
(`autograder.notebook.grade = lambda *a, **k: None` once scored 20/20). So the kernel's
outcome is not the grade. After nbgrader has autograded an assignment, for each student:

1. the student's submitted notebook is read by the release's own cells, by their ids
   (module_source: never by nbgrader metadata, which the student can edit) and written out as
   one module file, <assignment>.py, in a package folder: the student's solution cells, the
   release's given code and imports, and of the other cells only the imports, helpers and
   classes the solution cells use (scratch work, a self-check copied from a test cell, magics,
   plots, prints and a cell that raises change nothing); `from autograder.trusted.x import`
   (and its fallback, `from assignments.x import`) becomes `from .x import`, as in the .py
   exercises;
2. that folder is graded by the sandboxed batch engine (autograder/run/sandbox: probes in a
   confined process, verdicts here) on the hidden tier, with the student's own seed derived
   from course.toml's secret;
3. the result set is published (sinks.py, as in every channel): the scores go into
   nbgrader's gradebook through its API (nbgrader.api.Gradebook), one per test cell, with the
   per-check point overrides and the late policy of course.toml; the official verdict is
   appended to each test cell of the autograded notebook, so `make feedback` shows it; the
   verdicts `make class-report` reads go to judged/<student>/<assignment>.json.

Under `make autograde` the test cells run no check in the kernel (autograder/notebook.py):
every check is graded here, in the sandbox placement, with the CPU limits and the crash and
timeout policy of every official channel, so an endless loop costs CPU seconds once per
function; each kernel cell has the same CPU seconds (course.CELL_CPU_LIMIT), not nbgrader's
cell timeout. A notebook that could not be judged gets zero on every test cell, with the
reason in its comments and under its test cells (`withhold`), and a test cell without an
official result gets zero: never the kernel's unchecked scores.
"""

from __future__ import annotations

import ast
import datetime as dt
import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import registry
from ...core.check import Result
from ...core.course_config import CourseConfig
from ...core.i18n import _, status_word
from ...core.i18n import name as i18n_name
from ...core.settings import Settings
from ...feedback import report, sinks
from ...notebook import feedback
from ...run.limits import TimeLimits
from ...run.sandbox.jail import Limits
from ...run.sandbox.runner import Sandbox
from . import records

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

# nbformat and nbgrader are the instructor's (requirements-instructor.lock), imported where
# used: module_source, the one extractor of a notebook's code, also grades notebook uploads
# in Gradescope's and PrairieLearn's images, which hold the student set only (batch.py).

COURSE_ID = records.COURSE_ID  # the gradebook's course id (records.py), as its callers import it


def _nbformat():
    import nbformat

    return nbformat


_TRUSTED_IMPORT = re.compile(r"^(\s*)from (?:autograder\.trusted|assignments)\.(\w+) import ", re.M)
_MAGIC = re.compile(r"^(\s*)([%!].*)$", re.M)
OFFICIAL = "Graded outside your notebook, on inputs you have not seen"


@dataclass
class Judged:
    student: str
    assignment: str
    seed: int
    results: list[Result] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    score: float = 0.0
    max_score: float = 0.0
    penalty: float = 0.0
    timestamp: dt.datetime | None = None


def _text(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def _grade_id(cell) -> str:
    meta = cell.metadata.get("nbgrader")
    return str(meta.get("grade_id") or "") if isinstance(meta, dict) else ""


def _python(source: str) -> str:
    """A cell's code as module code: the trusted imports relative, IPython magics comments."""
    source = _TRUSTED_IMPORT.sub(r"\1from .\2 import ", source)
    return _MAGIC.sub(r"\1# (IPython, left out) \2", source)


def _guarded(source: str) -> str:
    """A statement that may fail (a print, a self-check, a plot) and costs nothing if it does."""
    return "try:\n" + textwrap.indent(source, "    ") + "\nexcept Exception:\n    pass"


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _kit_import(node: ast.stmt) -> bool:
    """An import of the kit's own API (a self-check copied from a test cell): the grader's
    business, never the student's code (the trusted stand-ins are relative imports by now)."""
    if isinstance(node, ast.ImportFrom):
        names = [node.module or ""] if not node.level else []
    elif isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        return False
    return any(n.split(".")[0] in ("autograder", "assignments") for n in names)


def _solution_code(source: str) -> str:
    """A solution cell as module code: its defs and classes as written; its bare
    expressions (a print, a plot, a self-check's call) and imports of the kit left out; every
    other top-level statement (imports, assignments) guarded, so a stray line costs nothing.
    A cell that does not parse is kept as written: its SyntaxError is the student's to see."""
    code = _python(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    parts = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        segment = "\n".join(code.splitlines()[first - 1 : node.end_lineno])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            parts.append(segment)
        elif not isinstance(node, ast.Expr) and not _kit_import(node):
            parts.append(_guarded(segment))
    return "\n".join(parts)


def _extras(cells: list, taken: set[str]) -> list[tuple[ast.stmt, str]]:
    """The student's other cells' imports, defs, classes and assignments (scratch work:
    nothing else of it runs), each as (node, source); an import of the kit (a self-check
    copied from a test cell) and a def, class or assignment of a name the release's cells
    define are left out (a scratch copy of an exercise never replaces the solution cell)."""
    found: list[tuple[ast.stmt, str]] = []
    for c in cells:
        code = _python(_text(c))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        lines = code.splitlines()
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if _kit_import(node) or isinstance(node, ast.ImportFrom) and node.level:
                    continue  # the kit's own API (a copied self-check): not the student's code
            elif not isinstance(
                node,
                (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign),
            ):
                continue
            elif _bound(node) & taken:
                continue
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            found.append((node, "\n".join(lines[first - 1 : node.end_lineno])))
    return found


def release_notebook(root: Path, assignment: str):
    """The assignment's notebook as released (course/release/, else course/source/; None
    when the course has neither): the cells the official grade reads, by their ids."""
    for folder in ("release", "source"):
        path = Path(root) / folder / assignment / f"{assignment}.ipynb"
        if path.is_file():
            return _nbformat().read(path, as_version=4)
    return None


def _kind(cell) -> str:
    meta = cell.metadata.get("nbgrader")
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("grade_id") == "setup":
        return "setup"
    if meta.get("solution"):
        return "solution"
    if meta.get("grade"):
        return "test"
    return "given" if meta.get("locked") else "ordinary"


def module_source(nb, assignment: str, release=None) -> str:
    """A submitted notebook's code as the module file <assignment>.py, read by the release's
    own cells (`release`: release_notebook), never by metadata the student can edit:

    - the release's code cells in order, without the setup and test cells: each solution
      cell is the student's cell with the release's cell id (else the cell that carries its
      nbgrader grade_id, else the last cell that defines the same names), the locked given
      code and the ordinary cells (imports) are the release's own;
    - from the student's other cells, only the imports, defs, classes and assignments that
      the graded code uses (a helper or a constant defined in a cell of its own); a
      self-check copied from a test cell, magics, prints, plots and a cell that raises are
      left out;
    - in a solution cell, bare expressions (a print, a plot, a self-check's call) are left
      out and every other top-level statement but a def or class is guarded: a stray line
      there costs nothing.
    """
    own = release is None  # no release to read it by (batch, Gradescope, PrairieLearn uploads)
    if own:
        release = nb
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    by_id = {c.get("id"): c for c in code_cells if c.get("id")}
    by_grade_id: dict[str, Any] = {}
    for c in code_cells:
        by_grade_id.setdefault(_grade_id(c), c)
    release_code = [c for c in release.cells if c.cell_type == "code"]
    used: set[int] = set()
    chosen: list[tuple[str, str, str]] = []  # (kind, label, code)
    taken: set[str] = set()
    for r in release_code:
        kind = _kind(r)
        if kind in ("setup", "test"):
            continue
        label = _grade_id(r) or r.get("id", "")
        if kind != "solution":
            # Without a release, an ordinary cell is the student's own: a self-check or a
            # scratch line there costs nothing, as in a solution cell (make autograde leaves
            # such cells out; here they cannot be told from the given imports).
            code = _solution_code(_text(r)) if own and kind == "ordinary" else _python(_text(r))
            chosen.append((kind, label, code))
            taken |= _defined_names_of(code)
            continue
        wanted = _defined_names_of(_python(_text(r)))
        taken |= wanted
        found = by_id.get(r.get("id")) or by_grade_id.get(_grade_id(r))
        if found is None or id(found) in used:
            candidates = [
                c
                for c in code_cells
                if id(c) not in used and wanted and wanted <= _defined_names_of(_python(_text(c)))
            ]
            found = candidates[-1] if candidates else None
        if found is None:
            chosen.append((kind, label, f"# (no cell of the submission holds {label})"))
            continue
        used.add(id(found))
        chosen.append((kind, label, _solution_code(_text(found))))
    kit_cells = {c.get("id") for c in release_code if _kind(c) in ("setup", "test")}
    kit_cells |= {_grade_id(c) for c in release_code if _kind(c) in ("setup", "test")}
    kit_cells.discard("")
    others = [
        c
        for c in code_cells
        if id(c) not in used and c.get("id") not in kit_cells and _grade_id(c) not in kit_cells
    ]
    extras = _extras(others, taken)
    graded = "\n".join(code for kind, _, code in chosen if kind == "solution")
    needed = _used(graded)
    keep: list[tuple[ast.stmt, str]] = []
    while True:  # what the graded code uses, and what that uses in turn
        more = [e for e in extras if e not in keep and _bound(e[0]) & needed]
        if not more:
            break
        keep += more
        for _node, text in more:
            needed |= _used(text)
    keep.sort(key=lambda e: extras.index(e))
    given = {line.strip() for _, _, code in chosen for line in code.splitlines()}
    imports = [
        _guarded(t)
        for n, t in keep
        if isinstance(n, (ast.Import, ast.ImportFrom)) and t.strip() not in given
    ]
    helpers = [_guarded(t) for n, t in keep if not isinstance(n, (ast.Import, ast.ImportFrom))]
    parts = [f'"""{assignment}.py, extracted from a submitted notebook by make autograde."""']
    if imports:
        parts.append("# --- imports from the notebook's other cells\n" + "\n".join(imports))
    placed = not helpers
    for kind, label, code in chosen:
        if kind == "solution" and not placed:
            parts.append("# --- helpers from the notebook's other cells\n" + "\n".join(helpers))
            placed = True
        parts.append(f"# --- cell {label}\n{code}")
    if not placed:
        parts.append("# --- helpers from the notebook's other cells\n" + "\n".join(helpers))
    return "\n\n".join(parts) + "\n"


def _defined_names_of(code: str) -> set[str]:
    try:
        return _defined_names(ast.parse(code))
    except SyntaxError:
        return set()


def write_package(nb, assignment: str, folder: Path, release=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / f"{assignment}.py").write_text(module_source(nb, assignment, release))
    return folder


def scaled(result: Result, points: float) -> float:
    """A result's score on `points` (a per-check override) instead of the check's own."""
    if result.points <= 0:
        return 0.0
    return round(result.score * points / result.points, 6)


def judge_assignment(
    root: Path,
    config: CourseConfig,
    assignment: str,
    students: list[str],
    *,
    sandbox_factory=None,
    settings: Settings | None = None,
) -> list[Judged]:
    """Grade each student's autograded notebook of `assignment` in the sandbox, under the
    run's `settings` (its sandbox mode and limits; default: Settings())."""
    root = Path(root)
    if assignment not in registry.modules():
        raise ValueError(f"assignment {assignment!r} is no exercise module of the kit")
    judged: list[Judged] = []
    stage = Path(tempfile.mkdtemp(prefix="attention-lab-judge-"))
    factory = sandbox_factory or Sandbox
    try:
        # slow: gpt's training cell is judged here, once (the kernel skips it under autograde)
        # per_student: each student's references are computed for their own seed, on the
        # trusted side (a fork of the sandbox's zygote), before their sandboxed process starts.
        settings = settings or Settings()
        with factory(
            [assignment],
            hide=[root, stage],
            slow=True,
            per_student=True,
            limits=Limits.of(settings),
            time_limits=TimeLimits.of(settings),  # the one rule of every channel
            sandbox_mode=settings.sandbox_mode,
        ) as sb:
            release = release_notebook(root, assignment)
            for student in students:
                path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
                item = Judged(student, assignment, config.seed(student, assignment))
                judged.append(item)
                if not path.is_file():
                    item.notes.append("nbgrader produced no autograded notebook")
                    continue
                # The student's own file (nbgrader's copy has cells it overwrote by the
                # metadata the student can edit), read by the release's cell ids.
                handed_in = root / "submitted" / student / assignment / f"{assignment}.ipynb"
                try:
                    nb = _nbformat().read(handed_in if handed_in.is_file() else path, as_version=4)
                    folder = write_package(nb, assignment, stage / student, release)
                    graded = sb.grade(folder, student, seed=item.seed)
                except Exception as e:  # noqa: BLE001 - one notebook never stops the class
                    item.notes.append(f"not judged ({type(e).__name__}: {e})")
                    continue
                item.results, item.notes = graded.results, list(graded.notes)
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return judged


def record(root: Path, config: CourseConfig, judged: list[Judged]) -> None:
    """Publish each judged notebook (sinks.py): its scores into the gradebook (nbgrader's
    API) and its verdicts into the notebook, and the verdicts `make class-report` reads."""
    root = Path(root).resolve()
    for item in judged:
        if not item.results:  # not judged: the kernel's scores are no grade
            reason = "; ".join(item.notes) or "no official result"
            withhold(root, item.assignment, [item.student], reason)
            item.max_score = sinks.module_max(item.assignment)
            continue
        book = GradebookSink(root, config, item.assignment)
        verdicts = root / "judged" / item.student / f"{item.assignment}.json"
        result_set = sinks.ResultSet(item.student, item.results, notes=item.notes, hints=None)
        try:
            sinks.publish(result_set, [book, sinks.ClassReportData(verdicts)])
        except sinks.TotalMismatch as e:  # a result set that does not add up: no grade of it
            item.notes.append(str(e))
            item.results = []
            withhold(root, item.assignment, [item.student], str(e))
            item.max_score = sinks.module_max(item.assignment)
            continue
        item.score, item.max_score = book.score, book.max_score
        item.penalty, item.timestamp = book.penalty, book.timestamp
        try:  # what it was computed under (make export, make regrade ALL=1)
            records.write(root, config, item)
        except OSError as e:  # the grade stands; export calls it stale, ALL=1 grades it again
            item.notes.append(f"its record could not be written ({e})")


@dataclass
class GradebookSink:
    """The sink (sinks.py) of nbgrader's gradebook, through its API: one score per test cell
    of `assignment`, scaled to course.toml's per-check points (a manual score, if any, still
    wins), the due date and the late penalty; then the official verdict in each test cell of
    the autograded notebook (`make feedback` shows it). What it recorded is kept in `score`,
    `max_score`, `penalty` and `timestamp` (the autograde summary)."""

    root: Path
    config: CourseConfig
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    penalty: float = 0.0
    timestamp: dt.datetime | None = None

    def publish(self, result_set: sinks.ResultSet) -> None:
        write_gradebook(self, result_set)


def write_gradebook(book: GradebookSink, result_set: sinks.ResultSet) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    root, config, a, student = Path(book.root), book.config, book.assignment, result_set.name
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        due = config.due.get(a)
        if due is not None:
            naive_utc = due.astimezone(dt.UTC).replace(tzinfo=None)  # as nbgrader stores it
            gb.update_or_create_assignment(a, duedate=naive_utc)
        scored: set[str] = set()
        for result in result_set.results:
            check = registry.find(result.check_id)
            points = config.points_of(check)
            try:
                grade = gb.find_grade(f"test-{check.slug}", a, a, student)
            except MissingEntry:
                result_set.notes.append(f"the gradebook has no cell for {check.id}")
                continue
            # The gradebook's maximum is the cell's points when it was released; course.toml
            # may say otherwise since (a score above the maximum: 21 / 20). Its points win.
            cell = gb.find_grade_cell(f"test-{check.slug}", a, a)
            if cell.max_score != points:
                cell.max_score = points
            grade.auto_score = min(points, max(0.0, scaled(result, points)))
            scored.add(grade.name)
            book.score += grade.auto_score
            book.max_score += points
        notebook = gb.find_submission_notebook(a, a, student)
        unscored = [g for g in notebook.grades if g.name not in scored]
        for grade in unscored:  # no official result: 0, never the kernel's score
            grade.auto_score = 0.0
            book.max_score += float(grade.max_score)
        if unscored:
            names = ", ".join(sorted(g.name for g in unscored))
            result_set.notes.append(f"no official result for {names}: 0 points")
        submission = gb.find_submission(a, student)
        if submission.timestamp is not None:
            book.timestamp = submission.timestamp.replace(tzinfo=dt.UTC)
        book.penalty = config.penalty(a, book.score, book.timestamp)
        notebook.late_submission_penalty = book.penalty or None
        gb.db.commit()
    annotate(root / "autograded" / student / a, a, result_set.results, config)
    if unscored:
        missing = {g.name for g in unscored}
        withheld_text(root / "autograded" / student / a, a, missing, result_set.notes[-1])


def withhold(root: Path, assignment: str, students: list[str], reason: str = "") -> None:
    """Zero every test cell of notebooks that could not be judged (the kernel runs no check
    under `make autograde`, so nbgrader's own scores say nothing): never a grade nobody gave.
    The reason goes in each solution cell's comment (nbgrader's feedback shows it) and under
    each test cell of the autograded notebook."""
    root = Path(root).resolve()
    from nbgrader.api import Gradebook

    reason = _("not graded: {reason}").format(reason=reason or _("no official result"))
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        _withhold(gb, assignment, students, reason)
    for student in students:
        withheld_text(root / "autograded" / student / assignment, assignment, None, reason)


def _withhold(gb: Gradebook, assignment: str, students: list[str], reason: str) -> None:
    from nbgrader.api import MissingEntry

    for student in students:
        try:
            notebook = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            continue
        for grade in notebook.grades:
            grade.auto_score = 0.0
        for comment in notebook.comments:
            comment.auto_comment = reason
    gb.db.commit()


def withheld_text(folder: Path, assignment: str, cells: set[str] | None, reason: str) -> None:
    """Say under each test cell in `cells` (None: all) of the autograded notebook that it got
    0 officially, and why."""
    path = folder / f"{assignment}.ipynb"
    if not path.is_file():
        return
    nbformat = _nbformat()
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        meta = c.metadata.get("nbgrader") or {}
        if c.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        if cells is not None and meta.get("grade_id") not in cells:
            continue
        text = f"{OFFICIAL}: 0 / {float(meta.get('points') or 0):g}  {reason}\n"
        c.outputs = [o for o in c.get("outputs", []) if OFFICIAL not in o.get("text", "")]
        c.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=text))
    scrub_kernel_outputs(nb)
    nbformat.write(nb, path)


def verdict_text(result: Result, points: float) -> str:
    score = scaled(result, points)
    head = f"{OFFICIAL}: {i18n_name(result.name)}: {score:g} / {points:g}"
    if result.passed:
        return f"{head}  {_('PASS')}\n"
    word = status_word(report.shown_status(result))
    text = f"{head}  {word.upper() if word.isascii() else word}\n"
    if result.message:
        text += feedback(result) + "\n"
    return text


# A terminal's control sequence (CSI: colours, clearing the screen, moving the cursor).
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def kernel_text(text: str) -> str:
    """What the kernel printed, as a page shows it: terminal sequences taken out (IPython's
    coloured tracebacks, or a student's green "PASS 20/20" that clears the screen), a carriage
    return's overwrite applied as Jupyter applies it (a progress bar's last state), every
    other control character escaped (sinks.safe)."""
    lines = []
    for line in _CSI.sub("", text).split("\n"):
        line = line.rstrip("\r")
        lines.append(line.rsplit("\r", 1)[-1])
    return sinks.safe("\n".join(lines))


def scrub_kernel_outputs(nb) -> None:
    """Every text the student's kernel left in the autograded notebook made `kernel_text`:
    nbgrader's feedback page and formgrader show them (the kernel's outcome is no grade, but
    its outputs are student-derived text in an instructor's output, as in every channel)."""
    for c in nb.cells:
        for out in c.get("outputs", []):
            if isinstance(out.get("text"), str):
                out["text"] = kernel_text(out["text"])
            for key in ("ename", "evalue"):
                if isinstance(out.get(key), str):
                    out[key] = kernel_text(out[key])
            if isinstance(out.get("traceback"), list):
                out["traceback"] = [kernel_text(str(t)) for t in out["traceback"]]
            data = out.get("data") or {}
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = kernel_text(data["text/plain"])


def annotate(folder: Path, assignment: str, results: list[Result], config: CourseConfig) -> None:
    """Append the official verdict to each test cell of the autograded notebook; the kernel's
    own outputs made safe (scrub_kernel_outputs)."""
    path = folder / f"{assignment}.ipynb"
    if not path.is_file():
        return
    nbformat = _nbformat()
    nb = nbformat.read(path, as_version=4)
    by_cell = {f"test-{r.check_id.split('.', 1)[1]}": r for r in results}
    for c in nb.cells:
        grade_id = (c.metadata.get("nbgrader") or {}).get("grade_id", "")
        if c.cell_type == "code" and grade_id in by_cell:
            result = by_cell[grade_id]
            text = verdict_text(result, config.points_of(registry.find(result.check_id)))
            c.outputs = [o for o in c.get("outputs", []) if OFFICIAL not in o.get("text", "")]
            c.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=text))
    scrub_kernel_outputs(nb)
    nbformat.write(nb, path)
