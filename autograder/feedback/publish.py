"""build/results.json and build/report.html: every module graded so far, each at its latest.

`make grade EX=m`, `make grade-train` and `make watch` grade some modules; `publish` merges
them into what earlier gradings of the same submission left: a module graded now replaces
that module's earlier results (its tests in results.json, its section of report.html), the
other modules' results stay, and each module carries the time it was graded. A full
`make grade` (no EX) replaces everything.

The merged state lives beside results.json, in report-parts/<results file's stem>/: one JSON
file per module with its Gradescope entries, its results (the page's summary) and its HTML
section, pictures included (they are drawn from what the student's code returned, which only
the grading that ran it has). results.json and report.html are rebuilt from it each time.

The state belongs to one submission folder: graded with another SUBMISSION, it starts fresh
(and the table says so), so two submissions' results never mix. Every file is written to a
temporary file and renamed into place, and a lock file (fcntl) makes two gradings that finish
at once publish one after the other.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import syllabus
from ..core.check import Check, Result, Status
from ..core.i18n import _
from . import report, report_html

PARTS = "report-parts"  # beside results.json
FORMAT = 1  # the parts' format; a part of another format is dropped


def now() -> str:
    """This moment, as results.json records it: ISO 8601, local time with its UTC offset."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def shown(stamp: str) -> str:
    """A recorded time as the table and the report show it: 2026-12-02 17:40:05."""
    try:
        return datetime.datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def parts_folder(results_path: Path) -> Path:
    return Path(results_path).parent / PARTS / Path(results_path).stem


def report_path(results_path: Path) -> Path:
    return Path(results_path).parent / "report.html"


def submission_key(folder: Path | str) -> str:
    return str(Path(folder).resolve())


@dataclass
class Part:
    """One module's latest grading: what results.json and report.html hold for it."""

    module: str
    submission: str  # submission_key of the folder graded
    graded_at: str  # now()
    tests: list[dict[str, Any]]  # Gradescope's entries, worded when graded
    results: list[Result]  # without printed output: the page's summary only
    section: str | None  # its HTML section, or None when the pictures failed
    # the checks not run (the training runs `make grade-train` grades): {id, name, points}
    left_out: list[dict[str, Any]] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(t["score"] for t in self.tests)

    @property
    def max_score(self) -> float:  # a check that waits counts here, as in the table's total
        return sum(r.points for r in self.results)

    @property
    def module_max(self) -> float:
        """The module's one total (sinks.module_max): the checks graded and those left out."""
        return self.max_score + sum(c["points"] for c in self.left_out)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "module": self.module,
            "submission": self.submission,
            "graded_at": self.graded_at,
            "tests": self.tests,
            "results": [dataclasses.asdict(r) for r in self.results],
            "section": self.section,
            "left_out": self.left_out,
        }

    @classmethod
    def from_json(cls, data: Any) -> Part:
        """A part as stored; ValueError (or KeyError, TypeError) when it is not one."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a report part of this kit's format")
        results = [Result(**{**r, "status": Status(r["status"])}) for r in data["results"]]
        tests = data["tests"]
        if not all(isinstance(t, dict) and {"score", "max_score"} <= set(t) for t in tests):
            raise ValueError("a test entry without score or max_score")
        section = data["section"]
        return cls(
            module=str(data["module"]),
            submission=str(data["submission"]),
            graded_at=str(data["graded_at"]),
            tests=tests,
            results=results,
            section=section if isinstance(section, str) else None,
            left_out=list(data.get("left_out", [])),
        )


@dataclass
class Published:
    """What one publish wrote: every module results.json now holds, in course order."""

    results_path: Path
    parts: list[Part]
    graded: list[str]  # the modules graded now
    replaced: str = ""  # the other submission whose results were dropped, if any
    report: Path | None = None  # None: report.html not written (report_error says why)
    report_error: str = ""
    problems: list[str] = field(default_factory=list)  # parts that could not be read

    @property
    def kept(self) -> list[Part]:
        """The modules kept from earlier gradings."""
        return [p for p in self.parts if p.module not in self.graded]

    @property
    def score(self) -> float:
        return totals(self.parts)[0]

    @property
    def max_score(self) -> float:
        return totals(self.parts)[1]


def totals(parts: list[Part]) -> tuple[float, float]:
    """(score, max_score) of the modules' parts, the totals results.json and the page show."""
    return sum(p.score for p in parts), sum(p.max_score for p in parts)


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it: a reader (a browser
    reloading the page, Gradescope, another grading) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def locked(results_path: Path) -> Iterator[None]:
    """Hold the lock of `results_path`'s merged state (one grading publishes at a time)."""
    folder = parts_folder(results_path)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load(results_path: Path) -> tuple[dict[str, Part], list[str]]:
    """The stored parts {module: part}, and a line per file that could not be read."""
    parts, problems = {}, []
    folder = parts_folder(results_path)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            part = Part.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append(f"{path.name}: {type(e).__name__}: {e}")
            continue
        if part.module == path.stem:
            parts[part.module] = part
    return parts, problems


def _course_order(modules) -> list[str]:
    order = {m: i for i, m in enumerate(syllabus.MODULES)}
    return sorted(modules, key=lambda m: (order.get(m, len(order)), m))


def results_json(parts: list[Part]) -> dict[str, Any]:
    """Gradescope's results.json over every part: the documented keys (score, tests[] with
    name, score, max_score, status, output), each test's module and time in its extra_data,
    and a top-level extra_data with the submission and a {module: time, points} map."""
    tests = []
    for p in parts:
        for t in p.tests:
            extra = {**t.get("extra_data", {}), "module": p.module, "graded_at": p.graded_at}
            tests.append({**t, "extra_data": extra})
    modules = {
        p.module: {
            "graded_at": p.graded_at,
            "score": p.score,
            "max_score": p.max_score,
            "module_max": p.module_max,  # one total: max_score and the checks left out
            **({"left_out": p.left_out} if p.left_out else {}),
        }
        for p in parts
    }
    held = report.waiting_summary([r for p in parts for r in p.results])  # waiting.py
    score, max_score = totals(parts)
    return {
        "score": score,
        "max_score": max_score,
        "tests": tests,
        **({"output": held["output"]} if held else {}),
        "extra_data": {
            "submission": parts[0].submission if parts else "",
            "modules": modules,
            **held.get("extra_data", {}),
        },
    }


def publish(
    results: list[Result],
    *,
    submission: Path | str,
    results_path: Path,
    hints: report.Hints,
    sections: dict[str, str] | None,
    graded_at: str,
    title: str,
    full: bool,
    left_out: list[Check] | None = None,
) -> Published:
    """Merge `results` (the modules graded now, with their HTML `sections`; None or a missing
    module: its pictures could not be drawn) into `results_path`'s state and rewrite
    results.json and report.html from it. `full`: every module was graded, the state is
    replaced. `left_out`: the checks not run (make grade's training runs), recorded with the
    module's one total. The report's failure never stops results.json (Published.report_error).
    Channels call it through sinks.MergedResults."""
    results_path = Path(results_path)
    key = submission_key(submission)
    by_module: dict[str, list[Result]] = {}
    for r in results:
        by_module.setdefault(r.module, []).append(r)
    tests = report.gradescope(results, hints)["tests"]
    new = {}
    for m, rs in by_module.items():
        entries = [t for t, r in zip(tests, results, strict=True) if r.module == m]
        kept = [dataclasses.replace(r, extra={}) for r in rs]  # printed output: not needed
        section = (sections or {}).get(m)
        out = [
            {"id": c.id, "name": c.name, "points": c.points}
            for c in left_out or []
            if c.module == m
        ]
        new[m] = Part(m, key, graded_at, entries, kept, section, out)
    folder = parts_folder(results_path)
    with locked(results_path):
        parts, problems = load(results_path)
        others = sorted({p.submission for p in parts.values() if p.submission != key})
        replaced = others[0] if others else ""
        if full or replaced:
            for m in parts:
                with contextlib.suppress(FileNotFoundError):
                    (folder / f"{m}.json").unlink()
            parts = {}
        for m, part in new.items():
            write_atomically(folder / f"{m}.json", json.dumps(part.to_json(), ensure_ascii=False))
            parts[m] = part
        ordered = [parts[m] for m in _course_order(parts)]
        text = json.dumps(results_json(ordered), indent=2, ensure_ascii=False) + "\n"
        write_atomically(results_path, text)
        published = Published(results_path, ordered, list(new), replaced, problems=problems)
        try:
            published.report = write_report(results_path, ordered, title)
        except Exception as e:  # the report never fails the grading
            published.report_error = f"{type(e).__name__}: {e}"
    return published


def write_report(results_path: Path, parts: list[Part], title: str) -> Path:
    """report.html beside results.json, from the parts: each module's section as it was
    rendered when graded (a section that failed: its table, without pictures)."""
    sections, graded = {}, {}
    for p in parts:
        graded[p.module] = shown(p.graded_at)
        if p.section is not None:
            sections[p.module] = p.section
        else:
            why = _("The pictures of this module could not be drawn.")
            sections[p.module] = report_html.section(
                p.module, p.results, f'<p class="note">{why}</p>', graded_at=graded[p.module]
            )
    everything = [r for p in parts for r in p.results]
    path = report_path(results_path)
    write_atomically(path, report_html.page(everything, sections, title, graded=graded))
    return path


def summary_lines(published: Published, width: int = 92) -> list[str]:
    """What the table adds about results.json: the other submission it started fresh from,
    the modules kept from earlier gradings (with their times) and the total over all."""
    lines = []
    path = published.results_path
    if published.replaced:
        text = _(
            "{path} held the results of another submission ({other}): started fresh for this one."
        ).format(path=path, other=published.replaced)
        lines.append(text)  # not wrapped: paths break badly (a terminal wraps it)
    for problem in published.problems:
        text = _("Left out of {path}: stored results that could not be read ({problem}).")
        lines.append(text.format(path=path, problem=problem))
    kept = published.kept
    if kept:
        lines.append(_("Kept from earlier gradings (each module's latest):"))
        for p in kept:  # as the table's module lines: the points end at `width`
            head = f"  {p.module}.py".ljust(20)
            head += _("graded {time}").format(time=shown(p.graded_at))
            points = f"{p.score:g} / {p.max_score:g}"
            lines.append(head + " " * max(1, width - report.width_of(head) - len(points)) + points)
        text = _("{path}: {score} / {total} points over {n} modules.").format(
            path=path,
            score=f"{published.score:g}",
            total=f"{published.max_score:g}",
            n=len(published.parts),
        )
        lines.append(text)
    return lines
