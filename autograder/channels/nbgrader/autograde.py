"""Judge nbgrader submissions outside the student's kernel (`make autograde`).

nbgrader runs a submitted notebook in a kernel where the student's code and the test cells
share one namespace: a solution cell can patch anything the test cells call
(`autograder.notebook.grade = lambda *a, **k: None` once scored 20/20). So the kernel's
outcome is not the grade. After nbgrader has autograded an assignment, for each student:

1. the notebook's code (solution cells, the given locked code and the student's ordinary
   cells; not the setup cell, not the test cells) is written out as one module file,
   <assignment>.py, in a package folder; `from autograder.trusted.x import` (and its
   fallback, `from assignments.x import`) becomes `from .x import`, as in the .py
   exercises, and IPython magics become comments;
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
function, not nbgrader's cell timeout per test cell. A notebook that could not be judged gets
zero on its test cells (`withhold`), never the kernel's unchecked scores.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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

COURSE_ID = "attention-lab"
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


def _nbformat():
    import nbformat

    return nbformat


def module_source(nb, assignment: str) -> str:
    """The code of a notebook as the module file <assignment>.py."""
    parts = [f'"""{assignment}.py, extracted from a submitted notebook by make autograde."""']
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        meta = c.metadata.get("nbgrader") or {}
        if meta.get("grade_id") == "setup" or (meta.get("grade") and not meta.get("solution")):
            continue
        source = c.source if isinstance(c.source, str) else "".join(c.source)
        source = _TRUSTED_IMPORT.sub(r"\1from .\2 import ", source)
        source = _MAGIC.sub(r"\1# (IPython, left out) \2", source)
        parts.append(f"# --- cell {meta.get('grade_id') or c.get('id', '')}\n{source}")
    return "\n\n".join(parts) + "\n"


def write_package(nb, assignment: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / f"{assignment}.py").write_text(module_source(nb, assignment))
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
            for student in students:
                path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
                item = Judged(student, assignment, config.seed(student, assignment))
                if not path.is_file():
                    item.notes.append("nbgrader produced no autograded notebook")
                    judged.append(item)
                    continue
                nb = _nbformat().read(path, as_version=4)
                folder = write_package(nb, assignment, stage / student)
                graded = sb.grade(folder, student, seed=item.seed)
                item.results, item.notes = graded.results, list(graded.notes)
                judged.append(item)
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
            withhold(root, item.assignment, [item.student])
            continue
        book = GradebookSink(root, config, item.assignment)
        verdicts = root / "judged" / item.student / f"{item.assignment}.json"
        result_set = sinks.ResultSet(item.student, item.results, notes=item.notes, hints=None)
        sinks.publish(result_set, [book, sinks.ClassReportData(verdicts)])
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
            book.score += grade.auto_score
            book.max_score += points
        submission = gb.find_submission(a, student)
        if submission.timestamp is not None:
            book.timestamp = submission.timestamp.replace(tzinfo=dt.UTC)
        notebook = gb.find_submission_notebook(a, a, student)
        book.penalty = config.penalty(a, book.score, book.timestamp)
        notebook.late_submission_penalty = book.penalty or None
        gb.db.commit()
    annotate(root / "autograded" / student / a, a, result_set.results, config)


def withhold(root: Path, assignment: str, students: list[str]) -> None:
    """Zero the test cells of notebooks that could not be judged (the kernel runs no check
    under `make autograde`, so nbgrader's own scores say nothing): never a grade nobody gave."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{Path(root).resolve() / 'gradebook.db'}"
    with Gradebook(url, COURSE_ID) as gb:
        _withhold(gb, assignment, students)


def _withhold(gb: Gradebook, assignment: str, students: list[str]) -> None:
    from nbgrader.api import MissingEntry

    for student in students:
        for check in registry.checks_of(assignment):
            try:
                grade = gb.find_grade(f"test-{check.slug}", assignment, assignment, student)
            except MissingEntry:
                continue
            grade.auto_score = 0.0
    gb.db.commit()


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


def annotate(folder: Path, assignment: str, results: list[Result], config: CourseConfig) -> None:
    """Append the official verdict to each test cell of the autograded notebook."""
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
    nbformat.write(nb, path)
