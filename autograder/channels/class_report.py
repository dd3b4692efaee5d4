"""`make class-report`: the class as a whole, from batch results or the nbgrader course.

Reads either a batch output folder (build/batch: grades.csv and <student>/results.json) or an
nbgrader course folder (the gradebook, and judged/<student>/<assignment>.json that
`make autograde` writes), and writes, in build/class-report/:

    index.html           the report: plots, tables, students not graded
    scores.png           score distribution per module (share of the module's points)
    misconceptions.png   the most common misconceptions, by share of graded students
    failed-checks.png    the checks failed most often
    long.csv             one row per student and check: score, max, status, misconception
    canvas.csv           a Canvas gradebook import: one column per module, "Points Possible" row
"""

from __future__ import annotations

import collections
import csv
import html
import json
import re
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import registry
from ..core.check import IMPORT_ERROR, MISSING_FILE, UNSTARTED

LONG_COLUMNS = ["student", "module", "check", "score", "max_score", "status", "misconception"]
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


@dataclass
class Row:
    student: str
    module: str
    check: str  # the check's name, "module: title"
    score: float
    max_score: float
    status: str  # passed | failed | not attempted | note | ...
    misconception: str


@dataclass
class ClassData:
    source: str
    rows: list[Row] = field(default_factory=list)
    not_graded: list[tuple[str, str]] = field(default_factory=list)  # (who, why)
    totals: dict[str, dict[str, float | None]] = field(default_factory=dict)  # student -> module
    ids: dict[str, dict[str, str]] = field(default_factory=dict)  # Canvas's columns (roster)

    @property
    def modules(self) -> list[str]:
        present = {r.module for r in self.rows}
        return [m for m in registry.modules() if m in present]

    @property
    def students(self) -> list[str]:
        return sorted({r.student for r in self.rows} | set(self.totals))


def _status(test: dict) -> str:
    match = re.match(r"\[([a-z ]+)\]", test.get("output", ""))
    if match and match.group(1) == "note":  # advice: "passed" for Gradescope, 0 of 0 points
        return "note"
    if test.get("status") == "passed":
        return "passed"
    return match.group(1) if match else "failed"


def _rows_of(student: str, data: dict) -> list[Row]:
    rows = []
    for test in data.get("tests", []):
        name = str(test.get("name", ""))
        module = name.split(":", 1)[0]
        tags = test.get("tags") or []
        status = _status(test)
        rows.append(
            Row(
                student,
                module,
                name,
                float(test.get("score", 0)),
                float(test.get("max_score", 0)),
                status,
                "" if status == "passed" else (tags[0] if tags else ""),
            )
        )
    return rows


def _missing_module(rows: list[Row]) -> bool:
    return all(r.misconception in (MISSING_FILE.id, IMPORT_ERROR.id) for r in rows)


def from_batch(folder: Path) -> ClassData:
    folder = Path(folder)
    grades = folder / "grades.csv"
    if not grades.is_file():
        raise FileNotFoundError(f"{folder} holds no grades.csv: run `make batch` first")
    data = ClassData(f"batch results in {folder}")
    with open(grades, newline="") as f:
        table = list(csv.DictReader(f))
    for line in table:
        student = line["student"]
        results = folder / student / "results.json"
        if not results.is_file():
            data.not_graded.append((student, "no results.json"))
            continue
        rows = _rows_of(student, json.loads(results.read_text()))
        data.rows += rows
        per_module = {}
        for module in {r.module for r in rows}:
            mine = [r for r in rows if r.module == module]
            per_module[module] = None if _missing_module(mine) else sum(r.score for r in mine)
        data.totals[student] = per_module
        if all(v is None for v in per_module.values()):
            data.not_graded.append((student, "no module file could be imported"))
        elif line.get("notes"):
            ended = [n for n in line["notes"].split(" | ") if "early" in n or "killed" in n]
            if ended:
                data.not_graded.append((student, f"partly: {ended[0]}"))
    return data


def from_course(root: Path) -> ClassData:
    """The nbgrader course: the judged results, the gradebook's rows, the collect report."""
    from .nbgrader import collect as course_collect
    from .nbgrader.export import canvas_ids
    from .nbgrader.export import rows as gradebook_rows

    root = Path(root)
    data = ClassData(f"nbgrader course in {root}")
    for path in sorted((root / "judged").glob("*/*.json")):
        data.rows += _rows_of(path.parent.name, json.loads(path.read_text()))
    for row in gradebook_rows(root):
        student, module = row["student_id"], row["assignment"]
        score = float(row["score"]) if row["score"] else None
        data.totals.setdefault(student, {})[module] = score
        if row["status"] == "missing":
            data.not_graded.append((f"{student} / {module}", "nothing submitted"))
    for item in course_collect.read_report(root):
        if item.action == "skipped":
            data.not_graded.append((item.source, f"download skipped: {item.why}"))
    data.ids = canvas_ids(root)
    return data


def load(source: Path) -> ClassData:
    source = Path(source)
    if (source / "gradebook.db").is_file():
        return from_course(source)
    if (source / "grades.csv").is_file():
        return from_batch(source)
    raise FileNotFoundError(
        f"FROM={str(source)!r} is neither a batch output folder (grades.csv) nor an nbgrader "
        "course folder (gradebook.db)"
    )


# --------------------------------------------------------------------------- summaries


def misconceptions(data: ClassData) -> list[tuple[str, str, int, float]]:
    """(exercise, misconception, students, share of graded students), most common first."""
    graded = {  # students graded on a module: not those who handed nothing in for it
        m: {s for s in data.students if data.totals.get(s, {}).get(m) is not None}
        or {r.student for r in data.rows if r.module == m}
        for m in data.modules
    }
    seen: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for r in data.rows:
        if r.misconception and r.misconception not in UNSTARTED | {IMPORT_ERROR.id}:
            exercise = _exercise(r)
            seen[exercise, r.misconception].add(r.student)
    found = [
        (ex, mis, len(who), len(who) / max(1, len(graded.get(ex.split(".")[0], ()))))
        for (ex, mis), who in seen.items()
    ]
    return sorted(found, key=lambda t: (-t[2], t[0], t[1]))


def _exercise(r: Row) -> str:
    for check in registry.checks_of(r.module):
        if check.name == r.check:
            return f"{r.module}.{check.exercise or r.module}"
    return r.module


def failed_checks(data: ClassData) -> list[tuple[str, int, int]]:
    """(check, students who lost points, students graded on it), most failed first."""
    lost: collections.Counter[str] = collections.Counter()
    graded: collections.Counter[str] = collections.Counter()
    for r in data.rows:
        graded[r.check] += 1
        if r.score < r.max_score:
            lost[r.check] += 1
    return sorted(((c, lost[c], graded[c]) for c in graded if lost[c]), key=lambda t: (-t[1], t[0]))


def module_max(data: ClassData) -> dict[str, float]:
    best: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for r in data.rows:
        best[r.module][r.check] = r.max_score
    return {m: sum(v.values()) for m, v in best.items()}


# --------------------------------------------------------------------------- outputs


def _plots(data: ClassData, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    maxima = module_max(data)
    modules = [m for m in data.modules if maxima.get(m)]
    if modules:
        shares = [
            [
                100 * t / maxima[m]
                for totals in data.totals.values()
                if (t := totals.get(m)) is not None
            ]
            for m in modules
        ]
        fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(modules) + 2), 4))
        ax.boxplot(shares, showmeans=True)
        ax.set_xticks(range(1, len(modules) + 1), modules)
        for i, values in enumerate(shares, start=1):
            ax.scatter([i] * len(values), values, alpha=0.4, s=12)
        ax.set_ylabel("score, % of the module's points")
        ax.set_ylim(-5, 105)
        ax.set_title("Score distribution per module (graded students)")
        fig.savefig(out / "scores.png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append("scores.png")
    found = misconceptions(data)[:15]
    bars = {
        "misconceptions.png": (
            [f"{ex}: {mis}" for ex, mis, _, _ in found],
            [100 * share for *_, share in found],
            "% of graded students",
            "Most common misconceptions",
        ),
        "failed-checks.png": (
            [textwrap.shorten(c, 70, placeholder="...") for c, *_ in failed_checks(data)[:15]],
            [100 * n / g for _, n, g in failed_checks(data)[:15]],
            "% of students who lost points",
            "Most-failed checks",
        ),
    }
    for name, (labels, values, xlabel, title) in bars.items():
        if labels:  # the largest bar on top
            fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.5))
            ax.barh(labels[::-1], values[::-1])
            ax.set_xlabel(xlabel)
            ax.set_title(title)
            fig.savefig(out / name, dpi=100, bbox_inches="tight")
            plt.close(fig)
            written.append(name)
    return written


def write_long_csv(data: ClassData, path: Path) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["student", "module", "check", "score", "max_score", "status", "misconception"]
        )
        for r in sorted(data.rows, key=lambda r: (r.student, r.module, r.check)):
            out.writerow(
                [r.student, r.module, r.check, f"{r.score:g}", f"{r.max_score:g}", r.status,
                 r.misconception]
            )  # fmt: skip


def write_canvas_csv(data: ClassData, path: Path, title: str = "Attention Lab") -> None:
    """Canvas's gradebook import: the roster's ids where it has them (ID, SIS User ID, SIS
    Login ID, Section), else the student id in "SIS Login ID" (Canvas matches on it); one
    column per module, a "Points Possible" row; a module not handed in is left empty."""
    maxima = module_max(data)
    modules = data.modules
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CANVAS_FIXED + [f"{title}: {m}" for m in modules])
        out.writerow(["Points Possible", "", "", "", ""] + [f"{maxima[m]:g}" for m in modules])
        for student in data.students:
            scores = data.totals.get(student, {})
            cells = ["" if scores.get(m) is None else f"{scores[m]:g}" for m in modules]
            known = data.ids.get(student, {})  # the roster's (nbgrader course: export.py)
            fixed = [known.get(c) or "" for c in CANVAS_FIXED]
            fixed[0], fixed[3] = fixed[0] or student, fixed[3] or student
            out.writerow(fixed + cells)


def _table(head: list[str], rows: Sequence[Sequence[object]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def write(data: ClassData, out: Path) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(data, out)
    write_long_csv(data, out / "long.csv")
    write_canvas_csv(data, out / "canvas.csv")
    maxima = module_max(data)
    summary = []
    for m in data.modules:
        scores = [got for t in data.totals.values() if (got := t.get(m)) is not None]
        mean = sum(scores) / len(scores) if scores else 0.0
        full = sum(s == maxima[m] for s in scores)
        summary.append([m, len(scores), f"{mean:.1f} / {maxima[m]:g}", full])
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Class report</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:left}img{max-width:100%}</style></head><body>",
        "<h1>Attention Lab: class report</h1>",
        f"<p>{html.escape(data.source)}; {len(data.students)} students. "
        "Also here: <a href='long.csv'>long.csv</a> (one row per student and check), "
        "<a href='canvas.csv'>canvas.csv</a> (Canvas gradebook import).</p>",
        "<h2>Scores per module</h2>",
        _table(["module", "students graded", "mean", "full marks"], summary),
    ]
    if "scores.png" in plots:
        parts.append("<img src='scores.png' alt='score distribution per module'>")
    parts.append("<h2>Most common misconceptions, per exercise</h2>")
    found = misconceptions(data)
    if found:
        rows = [[ex, mis, n, f"{100 * share:.0f}%"] for ex, mis, n, share in found[:40]]
        parts.append(_table(["exercise", "misconception", "students", "share"], rows))
        parts.append("<img src='misconceptions.png' alt='most common misconceptions'>")
    else:
        parts.append("<p>None recorded.</p>")
    parts.append("<h2>Most-failed checks</h2>")
    failed = failed_checks(data)
    if failed:
        rows = [[c, n, g, f"{100 * n / g:.0f}%"] for c, n, g in failed[:30]]
        parts.append(_table(["check", "lost points", "graded", "share"], rows))
        parts.append("<img src='failed-checks.png' alt='most-failed checks'>")
    else:
        parts.append("<p>Every check passed for every student.</p>")
    parts.append("<h2>Students not graded</h2>")
    if data.not_graded:
        parts.append(_table(["who", "why"], [list(x) for x in data.not_graded]))
    else:
        parts.append("<p>Everyone was graded.</p>")
    parts.append("</body></html>")
    index = out / "index.html"
    index.write_text("\n".join(parts) + "\n")
    return index


def cmd_class_report(args) -> int:
    try:
        data = load(Path(args.source))
    except (FileNotFoundError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    index = write(data, Path(args.out))
    print(f"wrote {index} ({len(data.students)} students, {len(data.rows)} check results)")
    for ex, mis, n, share in misconceptions(data)[:5]:
        print(f"  {ex}: [{mis}] {n} students ({100 * share:.0f}%)")
    return 0


def add_verbs(verbs) -> None:
    p = verbs.add_parser("class-report", help="the class as a whole: HTML, plots, LMS CSVs")
    p.add_argument("--from", dest="source", default="build/batch", help="batch out or course")
    p.add_argument("--out", default="build/class-report")
    p.set_defaults(run=cmd_class_report)
