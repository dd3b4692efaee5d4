"""After grading: one result set, published to sinks. Every channel's outputs come from here.

A grading, in any channel (`make grade`, `make watch`, `make batch`, Gradescope, PrairieLearn,
`make autograde`, `make hint`), ends with a `ResultSet`: the graded modules of one submission
(per module its Results, its maximum and its status) and the submission's metadata (name,
title, notes, what its code printed, the hint levels to show). `publish(result_set, sinks)`
hands it to each sink, in order; a sink makes one output:

    HintState        build/hint-state.json: one level more per failing attempt (ladder.py);
                     sets the result set's hint levels for the sinks after it
    Table            the per-module table `make grade` prints (report.table)
    ReportSections   report.html's sections, pictures drawn from what the code returned
    MergedResults    build/results.json (Gradescope's format) and build/report.html, merged
                     with the modules graded earlier (publish.py)
    GradescopeJson   one submission's results.json in Gradescope's format (batch, Gradescope)
    FeedbackText     feedback.txt: the table, the grader's notes, what the code printed
    PrairieLearnJson PrairieLearn's results.json (score 0..1, tests[] with points)
    GradesCsv        the submission's row of grades.csv (batch)
    GradebookSink    nbgrader's gradebook: one score per test cell, the late penalty, and the
                     official verdict in the autograded notebook (course_judge.GradebookSink
                     beside the rest of nbgrader's channel: nbgrader is an instructor extra)
    ClassReportData  the verdicts `make class-report` reads (judged/<student>/<module>.json)

One total per module: `module_max(module)` is what a module is worth, the points of every
check of it in the registry, the slow (training) checks included. Every channel that decides a
grade runs every check (nbgrader, batch, Gradescope, PrairieLearn), so its modules are
complete; `make grade` and `make watch` leave the training runs to `make grade-train` and say
so: a module they grade is "partial", its left-out checks named with their points. `publish`
refuses a result set whose graded and left-out points do not add up to `module_max`: a channel
that drops or adds a check is a bug, caught before any output is written.
"""

from __future__ import annotations

import csv
import json
import sys
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ..core import i18n, registry
from ..core.check import MISSING_FILE, Check, Result, Totals
from ..core.i18n import _
from . import ladder, report
from . import publish as merged

if TYPE_CHECKING:
    from ..run.sandbox.runner import Graded

COMPLETE, PARTIAL, NOT_GRADED = "complete", "partial", "not graded"


def module_max(module: str, points: Mapping[str, float] | None = None) -> float:
    """What `module` is worth, in every channel: the points of each of its checks (the slow
    training checks included); `points`: per-check overrides {check id: points} (course.toml)."""
    return sum((points or {}).get(c.id, c.points) for c in registry.checks_of(module))


class TotalMismatch(AssertionError):
    """A result set whose module does not add up to module_max: a channel's bug."""


@dataclass
class ModuleResults:
    """One graded module of a submission."""

    module: str
    results: list[Result]
    left_out: list[Check]  # checks this channel does not run here (slow: make grade-train)

    @property
    def max_points(self) -> float:
        return module_max(self.module)

    @property
    def graded_points(self) -> float:  # the maximum of the checks graded here
        return sum(r.points for r in self.results)

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results)

    @property
    def status(self) -> str:
        if not self.results:
            return NOT_GRADED
        return PARTIAL if self.left_out else COMPLETE

    @property
    def handed_in(self) -> bool:
        """False when the module's file was not handed in (every check says so)."""
        return not self.results or not all(r.misconception == MISSING_FILE.id for r in self.results)


@dataclass
class ResultSet(Totals):
    """The graded modules of one submission, and what its outputs need to know about it."""

    name: str  # the submission: a student's name, or the folder graded
    results: list[Result]
    title: str = ""  # the table's first line
    folder: Path | None = None  # the submission's folder (hint state, merged results' owner)
    notes: list[str] = field(default_factory=list)  # the grader's notes on the submission
    output: str = ""  # what the student's code printed (an excerpt; sandboxed channels)
    output_bytes: int = 0
    not_graded: str = ""  # why the submission could not be graded at all ('' if it was)
    left_out: list[Check] = field(default_factory=list)  # checks not run (slow, make grade)
    hints: report.Hints = ladder.FRESH_LEVELS  # the hint levels shown (HintState sets them)
    graded_at: str = field(default_factory=merged.now)
    sections: dict[str, str] | None = None  # report.html's sections, drawn where graded
    show_printed: bool = False  # the table shows what the code printed under every check

    @classmethod
    def of_graded(cls, graded: Graded, title: str = "", **more: Any) -> ResultSet:
        """A sandboxed grading's outcome (sandbox.runner.Graded) as a result set."""
        return cls(
            graded.name,
            list(graded.results),
            title=title,
            notes=graded.notes,  # the same list: a note added later still reaches the outputs
            output=graded.output,
            output_bytes=graded.output_bytes,
            not_graded=graded.not_graded,
            **more,
        )

    @property
    def modules(self) -> list[ModuleResults]:
        """The modules graded, in the order of their results."""
        by_module: dict[str, list[Result]] = {}
        for r in self.results:
            by_module.setdefault(r.module, []).append(r)
        for c in self.left_out:
            by_module.setdefault(c.module, [])
        return [
            ModuleResults(m, rs, [c for c in self.left_out if c.module == m])
            for m, rs in by_module.items()
        ]

    def module(self, name: str) -> ModuleResults:
        found = [m for m in self.modules if m.module == name]
        return found[0] if found else ModuleResults(name, [], [])

    def check_totals(self) -> None:
        """Raise TotalMismatch unless each module's graded and left-out points make its
        module_max (one total per module in every channel)."""
        for m in self.modules:
            if not m.results:
                continue
            counted = m.graded_points + sum(c.points for c in m.left_out)
            if abs(counted - m.max_points) > 1e-9:
                raise TotalMismatch(
                    f"{self.name}: {m.module} adds up to {counted:g} points, "
                    f"not its {m.max_points:g} (a channel dropped or added a check)"
                )

    def by_module(self) -> dict[str, list[Result]]:
        return {m.module: m.results for m in self.modules}


class Sink(Protocol):
    """One output of a grading."""

    def publish(self, result_set: ResultSet) -> None: ...


def publish(result_set: ResultSet, sinks: Iterable[Sink]) -> ResultSet:
    """Hand `result_set` to each sink, in order (HintState first: the others show its
    levels). The totals are checked first: no output of a set that does not add up."""
    result_set.check_totals()
    scrub(result_set)
    for sink in sinks:
        sink.publish(result_set)
    return result_set


# --------------------------------------------------------------------------- sinks


@dataclass
class HintState:
    """build/hint-state.json: this grading is one attempt at each failing check (ladder.py).
    `all_levels` (make grade HINTS=all): every level is shown, the state still advances;
    `record=False`: the levels recorded, without recording (a grading recorded elsewhere)."""

    folder: Path
    all_levels: bool = False
    record: bool = True
    only: Sequence[str] | None = None  # the check ids to record (make hint: its module's)
    state: Path | None = None  # the hint-state file (Settings.hint_state; None: ladder's default)

    def publish(self, result_set: ResultSet) -> None:
        results = result_set.results
        if self.only is not None:
            results = [r for r in results if r.check_id in self.only]
        if self.record:
            levels = ladder.advance(results, self.folder, self.state)
        else:
            levels = ladder.levels_of(results, self.folder, self.state)
        result_set.hints = ladder.ALL_LEVELS if self.all_levels else levels


@dataclass
class Table:
    """The per-module table (report.table), printed to `stream` (stdout by default)."""

    stream: TextIO | None = None
    lead: str = "\n"  # printed before the table

    def publish(self, result_set: ResultSet) -> None:
        print(self.lead + table_text(result_set), file=self.stream or sys.stdout, flush=True)


def table_text(result_set: ResultSet) -> str:
    # the training runs left to `make grade-train` (a check deselected with -k: not named)
    left_out = [(c.name, c.points) for c in result_set.left_out if c.slow]
    return report.table(
        result_set.results,
        result_set.title,
        show_printed=result_set.show_printed,
        left_out=left_out,
        hints=result_set.hints,
    )


@dataclass
class ReportSections:
    """report.html's sections, with the pictures drawn from what the student's code returned
    (`probed`: only the grading that ran it has them); the next sink, MergedResults, writes
    them. A failure is said and leaves the sections out: it never fails the grading."""

    submission: Any  # submission.Submission
    references: Any  # references.References: each module's reference outputs
    probed: dict[str, Any]

    def publish(self, result_set: ResultSet) -> None:
        try:
            modules = dict.fromkeys(r.module for r in result_set.results)
            refs = {m: self.references.module(m) for m in modules}
            from . import report_html  # torch: only when a report is drawn

            result_set.sections = report_html.sections(
                result_set.results,
                self.submission,
                refs,
                probed=self.probed,
                hints=result_set.hints,
                graded_at=merged.shown(result_set.graded_at),
            )
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            print(_("Report: pictures not drawn ({error})").format(error=error))


@dataclass
class MergedResults:
    """results.json and report.html beside it, merged with the modules graded earlier
    (publish.py). `full`: every module was graded, earlier ones are dropped. What was
    written is kept in `published` (the channel says where, and what was kept)."""

    results_path: Path
    full: bool = False
    published: merged.Published | None = None

    def publish(self, result_set: ResultSet) -> None:
        self.published = merged.publish(
            result_set.results,
            submission=result_set.folder or result_set.name,
            results_path=Path(self.results_path),
            hints=result_set.hints,
            sections=result_set.sections,
            graded_at=result_set.graded_at,
            title=result_set.title,
            full=self.full,
            left_out=result_set.left_out,
        )


def gradescope_data(result_set: ResultSet) -> dict[str, Any]:
    """One submission's results.json in Gradescope's format (report.gradescope), with the
    grader's notes as its top-level output."""
    data = report.gradescope(result_set.results, hints=result_set.hints)
    if result_set.notes:
        data["output"] = "\n".join(one_line(n) for n in result_set.notes)
    return data


@dataclass
class GradescopeJson:
    """One submission's results.json, Gradescope's format. `extra`: keys Gradescope reads
    that the channel sets (stdout_visibility)."""

    path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def publish(self, result_set: ResultSet) -> None:
        data = {**gradescope_data(result_set), **self.extra}
        write_json(Path(self.path), data)


def feedback_text(result_set: ResultSet) -> str:
    """feedback.txt: the table (every failing check with hint levels 1 and 2 where no ladder
    state is kept), the grader's notes, and what the student's code printed."""
    parts = [table_text(result_set)]
    if result_set.notes:
        notes = "\n".join(f"  - {one_line(n)}" for n in result_set.notes)
        parts.append(_("Notes from the grader:") + "\n" + notes)
    if result_set.output.strip():
        printed = "\n".join("  | " + line for line in result_set.output.rstrip().splitlines())
        head = _(
            "What your code printed while it was graded (your output, not the grader's "
            "words; {size} bytes):"
        ).format(size=f"{result_set.output_bytes:,}")
        parts.append(f"{head}\n{printed}")
    return "\n\n".join(parts) + "\n"


@dataclass
class FeedbackText:
    """feedback.txt at `path`, or printed to `stream` (Gradescope's instructor-only stdout)."""

    path: Path | None = None
    stream: TextIO | None = None

    def publish(self, result_set: ResultSet) -> None:
        text = feedback_text(result_set)
        if self.path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            Path(self.path).write_text(text)
        else:
            print(text, file=self.stream or sys.stdout)


def prairielearn_data(result_set: ResultSet, module: str) -> dict[str, Any]:
    """PrairieLearn's results.json for the question of `module`."""
    tests = []
    for r in result_set.results:
        message = ""
        if not r.passed:
            label = f"[{r.misconception}] " if r.misconception else ""
            lines = [label + i18n.message(r), *report.hints_of(r, result_set.hints)]
            message = "\n".join(lines)
        tests.append(
            {
                "name": r.name,
                "description": r.name.split(": ", 1)[-1],
                "points": r.score,
                "max_points": r.points,
                "message": message,
                "output": "",
            }
        )
    score, total = result_set.score, result_set.max_score
    message = f"{module}.py: {score:g} / {total:g} points on inputs you have not seen."
    if result_set.notes:
        message += " " + " ".join(result_set.notes)
    return {
        "gradable": True,
        "score": score / total if total else 0.0,
        "message": message,
        "output": feedback_text(result_set),
        "tests": tests,
    }


@dataclass
class PrairieLearnJson:
    """PrairieLearn's results.json for the question of `module`."""

    path: Path
    module: str

    def publish(self, result_set: ResultSet) -> None:
        write_json(Path(self.path), prairielearn_data(result_set, self.module))


@dataclass
class GradesCsv:
    """The submission's row of grades.csv (student, score, max_score, per module, notes);
    the other rows of the file are kept (a regrade of a subset updates its rows). A module
    file the student did not hand in reads "missing", not 0. Rows are written as they come
    (threads: one at a time), so an interrupted batch keeps the rows it graded."""

    path: Path
    modules: list[str]
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def header(self) -> list[str]:
        return ["student", "score", "max_score", *self.modules, "notes"]

    def row(self, result_set: ResultSet) -> list[str]:
        name, notes = cell(result_set.name), cell(" | ".join(result_set.notes))
        if result_set.not_graded:
            return [name, "not graded", "", *[""] * len(self.modules), notes]
        per_module = []
        for m in self.modules:
            graded = result_set.module(m)
            per_module.append(f"{graded.score:g}" if graded.handed_in else "missing")
        score, total = f"{result_set.score:g}", f"{result_set.max_score:g}"
        return [name, score, total, *per_module, notes]

    def publish(self, result_set: ResultSet) -> None:
        self.write([result_set])

    def write(self, result_sets: Iterable[ResultSet]) -> None:
        with self.lock:
            kept: dict[str, list[str]] = {}
            path = Path(self.path)
            if path.is_file():
                with open(path, newline="") as f:
                    old = list(csv.reader(f))
                if old and old[0] == self.header:
                    kept = {r[0]: r for r in old[1:] if r}
            for rs in result_sets:
                kept[cell(rs.name)] = self.row(rs)
            with open(path, "w", newline="") as f:
                out = csv.writer(f)
                out.writerow(self.header)
                for name in sorted(kept):
                    out.writerow(kept[name])


@dataclass
class ClassReportData:
    """The verdicts `make class-report` reads, misconceptions included (report.write_json)."""

    path: Path

    def publish(self, result_set: ResultSet) -> None:
        report.write_json(result_set.results, Path(self.path), hints=result_set.hints)


# --------------------------------------------------------------------------- helpers


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def safe(text: str) -> str:
    """Student-derived text made safe for every output: line breaks and tabs kept, every other
    control or format character escaped (ESC of a terminal sequence, a carriage return that
    overwrites a line, NUL, bidi overrides): `cat feedback.txt` shows what the student wrote,
    it does not run it on the reader's terminal."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(ch)[0] == "C" and ch not in "\n\t"
        else ch
        for ch in text
    )


def scrub(result_set: ResultSet) -> None:
    """Make every text of `result_set` that student code could have chosen `safe`, once,
    before any sink writes it: the Results' messages, hints and details (an exception's text,
    a repr of what was returned, what the code printed under a check), the grader's notes (file
    names) and what the code printed."""
    for r in result_set.results:
        r.message, r.hint = safe(r.message), safe(r.hint)
        r.details = {k: safe(v) if isinstance(v, str) else v for k, v in r.details.items()}
        r.extra = {k: safe(v) if isinstance(v, str) else v for k, v in r.extra.items()}
    result_set.notes[:] = [safe(n) for n in result_set.notes]
    result_set.output = safe(result_set.output)
    result_set.not_graded = safe(result_set.not_graded)


def plain(text: str, limit: int = 200) -> str:
    """Student-derived text (a file name...) made safe to show on one line: control and
    format characters (newlines, bidi overrides) escaped, length capped."""
    out = []
    for ch in str(text)[:limit]:
        if unicodedata.category(ch)[0] == "C":
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out) + (" [...]" if len(text) > limit else "")


def one_line(text: str) -> str:
    """A note on one line: line breaks become spaces, other control characters escaped."""
    return plain(" ".join(str(text).splitlines()), limit=4000)


def cell(text: str) -> str:
    """A grades.csv cell from text a student may have chosen: one line, and never read as
    a formula by a spreadsheet (a leading = + - @ tab or CR gets a quote)."""
    text = one_line(text)
    return "'" + text if text.startswith(("=", "+", "-", "@", "\t", "\r")) else text
