"""`make class-report`: the class as a whole, from batch results or the nbgrader course.

Reads either a batch output folder (build/batch: grades.csv and <student>/results.json) or an
nbgrader course folder (the gradebook, and judged/<student>/<assignment>.json that
`make autograde` writes), and writes, in build/class-report/:

    index.html           the report: scores per module, every student's row (a link to their
                         page), mistakes by misconception, the most-failed checks, work not
                         attempted, grader problems, students with no submission, similar
                         submissions
    students/<s>.html    one student: scores per module, their named mistakes, what they left
                         unattempted, what the grader could not judge, links to their feedback
    similar/*.html       two similar files side by side (similarity.py)
    similar.csv          every group and pair flagged for review (the report shows the first)
    scores.png           score distribution per module (share of the module's points)
    misconceptions.png   the most common misconceptions, by share of students who attempted
    failed-checks.png    the checks failed most often
    long.csv             one row per student and check: score, max, status, misconception
    canvas.csv           a Canvas gradebook import: one column per module, "Points Possible" row

Three kinds of lost points are told apart, by the misconception each check reports:
a *mistake* (a named misconception, or a failure the checks could not name), work *not
attempted* (a stub that still raises NotImplementedError, a missing file), and a *grader
problem* (a timeout, an import error, a crash, a killed process, a check that did not run):
the misconception tables and the most-failed checks count mistakes only. Similar submissions
are flagged for review; the report never changes a grade.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import hashlib
import html
import json
import os
import re
import shutil
import tempfile
import textwrap
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import paths, registry
from ..core.check import (
    CRASH,
    GRADER_ERROR,
    IMPORT_ERROR,
    MISNAMED_FILE,
    MISSING_FILE,
    TIMEOUT,
    UNSTARTED,
)
from ..core.check import NOT_ATTEMPTED as NOT_ATTEMPTED_MISCONCEPTION
from . import similarity
from .batch import find_submissions, gather_loose, package_folder, student_name

LONG_COLUMNS = ["student", "module", "check", "score", "max_score", "status", "misconception"]
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]

# The grader could not judge the check: not a named mistake, and not unattempted work. (The
# run layer's ids are named here so that this module needs no torch: run/policy.py,
# run/sandbox/runner.py; test_class_report checks that each is declared.) A "same as above"
# timeout is counted with the timeout it repeats.
SAME_AS = {"timeout-same-as-above": TIMEOUT.id, "timeout-top-level-same-as-above": TIMEOUT.id}
PROBLEMS = frozenset(
    {TIMEOUT.id, IMPORT_ERROR.id, CRASH.id, GRADER_ERROR.id, *SAME_AS}
    | {"killed", "not-run", "exited-early", "stalled", "channel-broken"}
)
PROBLEM_STATUSES = frozenset({"timed out", "error"})
PASSED, NOTE, MISTAKE, NOT_ATTEMPTED, PROBLEM = (
    "passed",
    "note",
    "mistake",
    "not attempted",
    "problem",
)
WHY_TODO = {
    NOT_ATTEMPTED_MISCONCEPTION.id: "the stub as given (it raises NotImplementedError)",
    MISSING_FILE.id: "the file was not handed in",
    MISNAMED_FILE.id: "the file was handed in under another name (Attention.py, attention (1).py)",
}
MAX_CODE_BYTES = 400_000  # a submitted file read for the similarity section, at most


@dataclass
class Row:
    student: str
    module: str
    check: str  # the check's name, "module: title"
    score: float
    max_score: float
    status: str  # passed | failed | not attempted | note | timed out | ...
    misconception: str
    message: str = ""  # the first line of the feedback, without its [status] [id] labels

    @property
    def kind(self) -> str:
        """passed, note, mistake, not attempted or problem (see the module's docstring)."""
        if self.status == PASSED:
            return PASSED
        if self.misconception in UNSTARTED or self.status == NOT_ATTEMPTED:
            return NOT_ATTEMPTED
        if self.misconception in PROBLEMS or self.status in PROBLEM_STATUSES:
            return PROBLEM
        return NOTE if self.status == NOTE else MISTAKE

    @property
    def problem(self) -> str:
        """The grader problem's name ('' when the check was judged)."""
        if self.kind != PROBLEM:
            return ""
        return SAME_AS.get(self.misconception, self.misconception or self.status)


@dataclass
class ModuleState:
    """One student's module: its score and how its checks ended."""

    module: str
    score: float | None  # None: not handed in
    max_score: float
    kinds: collections.Counter[str]
    problems: list[str]  # the problem ids, most frequent first

    @property
    def label(self) -> str:
        if self.score is None:
            return "not handed in"
        graded = sum(self.kinds.values())
        if graded and self.kinds[NOT_ATTEMPTED] == graded:
            return "not attempted"
        if graded and self.kinds[PROBLEM] == graded:
            return self.problems[0] if self.problems else PROBLEM
        return "graded"

    @property
    def css(self) -> str:
        """The cell's colour class (the legend under the students' table)."""
        label = self.label
        if label == "not handed in":
            return "absent"
        if label == "not attempted":
            return "todo"
        if label != "graded":
            return "problem"
        if self.score is not None and self.max_score and self.score >= self.max_score:
            return "full"
        return "partial" if self.score else "zero"


@dataclass
class ClassData:
    source: str
    rows: list[Row] = field(default_factory=list)
    not_graded: list[tuple[str, str]] = field(default_factory=list)  # (who, why)
    totals: dict[str, dict[str, float | None]] = field(default_factory=dict)  # student -> module
    # student -> [(label, path)]: their feedback and results files
    feedback: dict[str, list[tuple[str, Path]]] = field(default_factory=dict)
    # module -> student -> the file they handed in (the similarity section)
    code: dict[str, dict[str, str]] = field(default_factory=dict)
    stubs: dict[str, str] = field(default_factory=dict)  # module -> what everyone was given
    references: dict[str, str] = field(default_factory=dict)  # module -> solutions/<m>.py
    ids: dict[str, dict[str, str]] = field(default_factory=dict)  # Canvas's columns (roster)
    _indexed: tuple[int, dict[str, list[Row]], dict[str, float]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def modules(self) -> list[str]:
        present = {r.module for r in self.rows}
        return [m for m in registry.modules() if m in present]

    @property
    def students(self) -> list[str]:
        return sorted(set(self._index()[0]) | set(self.totals))

    def rows_of(self, student: str, module: str | None = None) -> list[Row]:
        by_student, _ = self._index()
        mine = by_student.get(student, [])
        return mine if module is None else [r for r in mine if r.module == module]

    def _index(self) -> tuple[dict[str, list[Row]], dict[str, float]]:
        """The rows by student, and module_max: built once per state of `rows`."""
        if self._indexed is None or self._indexed[0] != len(self.rows):
            by_student: dict[str, list[Row]] = collections.defaultdict(list)
            for r in self.rows:
                by_student[r.student].append(r)
            self._indexed = (len(self.rows), dict(by_student), module_max(self))
        return self._indexed[1], self._indexed[2]

    def state(self, student: str, module: str) -> ModuleState:
        rows = self.rows_of(student, module)
        kinds = collections.Counter(r.kind for r in rows)
        problems = collections.Counter(r.problem for r in rows if r.problem)
        totals = self.totals.get(student, {})
        if module in totals:
            score = totals[module]
        elif rows and not _missing_module(rows):
            score = sum(r.score for r in rows)
        else:
            score = None
        maximum = self._index()[1].get(module, 0.0)
        return ModuleState(module, score, maximum, kinds, [p for p, _ in problems.most_common()])

    def absent(self) -> list[str]:
        """Students with no submission at all: every module not handed in (not those whose
        submission could not be graded: they are listed with the reason)."""
        failed = {who for who, _ in self.not_graded}
        return [
            s
            for s in self.students
            if s not in failed
            and all(self.state(s, m).score is None for m in self.modules)
            and all(v is None for v in self.totals.get(s, {}).values())
        ]


def _status(test: dict) -> str:
    match = re.match(r"\[([a-z ]+)\]", test.get("output", ""))
    if match and match.group(1) == "note":  # advice: "passed" for Gradescope, 0 of 0 points
        return "note"
    if test.get("status") == "passed":
        return "passed"
    return match.group(1) if match else "failed"


def _message(test: dict) -> str:
    """The first line of a check's feedback, its [status] and [misconception] labels off."""
    lines = str(test.get("output", "")).splitlines()
    first = lines[0] if lines else ""
    return re.sub(r"^(\[[^\]]*\]\s*){1,2}", "", first).strip()


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
                "" if status == "passed" else _message(test),
            )
        )
    return rows


def _missing_module(rows: list[Row]) -> bool:
    """The module's file was not handed in (an import error is handed in: a zero, a problem)."""
    return bool(rows) and all(r.misconception == MISSING_FILE.id for r in rows)


def from_batch(folder: Path, submissions: Path | None = None) -> ClassData:
    folder = Path(folder)
    grades = folder / "grades.csv"
    if not grades.is_file():
        raise FileNotFoundError(f"{folder} holds no grades.csv: run `make batch` first")
    data = ClassData(f"batch results in {folder}")
    with open(grades, newline="") as f:
        table = list(csv.DictReader(f))
    for line in table:
        student = line["student"]
        if student.startswith("'") and (folder / student[1:]).is_dir():  # sinks.cell's quote
            student = student[1:]
        results = folder / student / "results.json"
        links = [(label, folder / student / name) for label, name in _BATCH_FILES]
        data.feedback[student] = [(label, p) for label, p in links if p.is_file()]
        if line.get("score") == "not graded" or not results.is_file():
            why = (line.get("notes") or "no results.json").removeprefix("not graded: ")
            data.not_graded.append((student, why))
            data.totals[student] = {}
            continue
        rows = _rows_of(student, json.loads(results.read_text()))
        data.rows += rows
        per_module: dict[str, float | None] = {}
        for module in {r.module for r in rows}:
            mine = [r for r in rows if r.module == module]
            per_module[module] = None if _missing_module(mine) else sum(r.score for r in mine)
        data.totals[student] = per_module
        if line.get("notes"):
            ended = [n for n in line["notes"].split(" | ") if "early" in n or "killed" in n]
            if ended:
                data.not_graded.append((student, f"partly: {ended[0]}"))
    if submissions is None:
        try:
            recorded = json.loads((folder / "batch.json").read_text()).get("submissions_folder")
        except (OSError, ValueError, AttributeError):
            recorded = None
        submissions = Path(recorded) if recorded else None
    if submissions is not None and submissions.is_dir():
        _batch_code(data, submissions)
    return data


_BATCH_FILES = [("feedback", "feedback.txt"), ("results.json", "results.json")]


def _read(path: Path) -> str:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_CODE_BYTES:
        return ""
    text = path.read_bytes().decode("utf-8", "replace")
    return _code_of(path.name, text)


def _code_of(name: str, text: str) -> str:
    return similarity.notebook_code(text) if name.endswith(".ipynb") else text


def _batch_code(data: ClassData, submissions: Path) -> None:
    """Each student's module files, read from the submissions folder batch graded (its loose
    files gathered as batch gathers them)."""
    with tempfile.TemporaryDirectory(prefix="attention-lab-loose-") as loose:
        try:
            gathered, _notes = gather_loose(submissions, Path(loose))
            found = {student_name(p): p for p in find_submissions(submissions, loose=gathered)}
        except Exception:
            return
        for student in data.students:
            path = found.get(student)
            if path is None:
                continue
            for module in data.modules:
                text = _zip_member(path, module) if path.is_file() else _folder_file(path, module)
                if text.strip():
                    data.code.setdefault(module, {})[student] = text
    _given(data)


def _folder_file(folder: Path, module: str) -> str:
    root = package_folder(folder)
    for name in (f"{module}.py", f"{module}.ipynb"):
        if (text := _read(root / name)).strip():
            return text
    return ""


def _zip_member(path: Path, module: str) -> str:
    try:
        with zipfile.ZipFile(path) as z:
            infos = [
                i
                for i in z.infolist()
                if Path(i.filename).name in (f"{module}.py", f"{module}.ipynb")
                and "__MACOSX" not in i.filename
                and i.file_size <= MAX_CODE_BYTES
            ]
            if not infos:
                return ""
            best = min(infos, key=lambda i: (i.filename.count("/"), i.filename))
            text = z.read(best).decode("utf-8", "replace")
            return _code_of(best.filename, text)
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError):
        return ""


def _given(data: ClassData, release: Path | None = None) -> None:
    """The stubs everyone was given (the course's released notebooks, or assignments/), and
    the solutions, to take out of and to compare with the submitted files."""
    for module in data.code:
        stub = ""
        if release is not None:
            stub = "\n".join(_read(p) for p in sorted((release / module).glob("*.ipynb")))
        if not stub.strip():
            stub = _read(paths.ROOT / "assignments" / f"{module}.py")
        data.stubs[module] = stub
        data.references[module] = _read(paths.ROOT / "solutions" / f"{module}.py")


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
    for student in data.totals:
        pages = sorted((root / "feedback" / student).glob("*/*.html"))
        data.feedback[student] = [(f"feedback: {p.parent.name}", p) for p in pages]
        for folder in sorted((root / "submitted" / student).glob("*")):
            text = "\n".join(_read(p) for p in sorted(folder.glob("*.ipynb")))
            if text.strip():
                data.code.setdefault(folder.name, {})[student] = text
    _given(data, release=root / "release")
    for item in course_collect.read_report(root):
        if item.action == "skipped":
            data.not_graded.append((item.source, f"download skipped: {item.why}"))
    data.ids = canvas_ids(root)
    return data


def load(source: Path, submissions: Path | None = None) -> ClassData:
    source = Path(source)
    if (source / "gradebook.db").is_file():
        return from_course(source)
    if (source / "grades.csv").is_file():
        return from_batch(source, submissions)
    raise FileNotFoundError(
        f"FROM={str(source)!r} is neither a batch output folder (grades.csv) nor an nbgrader "
        "course folder (gradebook.db)"
    )


# --------------------------------------------------------------------------- summaries


def attempted(data: ClassData, module: str) -> set[str]:
    """Students who attempted `module`: handed it in and wrote something (not only stubs)."""
    out = set()
    for s in data.students:
        state = data.state(s, module)
        if state.score is not None and state.label != "not attempted":
            out.add(s)
    return out


def misconceptions(data: ClassData) -> list[tuple[str, str, int, float]]:
    """(exercise, misconception, students, share of the students who attempted the module),
    most common first: mistakes only (not unattempted work, not grader problems)."""
    tried = {m: attempted(data, m) for m in data.modules}
    seen: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for r in data.rows:
        if r.misconception and r.kind in (MISTAKE, NOTE):
            seen[_exercise(r), r.misconception].add(r.student)
    found = [
        (ex, mis, len(who), len(who) / max(1, len(tried.get(ex.split(".")[0], ()))))
        for (ex, mis), who in seen.items()
    ]
    return sorted(found, key=lambda t: (-t[2], t[0], t[1]))


def _exercise(r: Row) -> str:
    for check in registry.checks_of(r.module):
        if check.name == r.check:
            return f"{r.module}.{check.exercise or r.module}"
    return r.module


def title(misconception: str) -> str:
    """A misconception's title: its message's first clause, placeholders as '…' (the first
    sentence of its first hint where the message opens with values rather than words)."""
    known = registry.all_misconceptions().get(misconception)
    if known is None:
        return "a failure the checks could not name" if not misconception else ""
    text = _clause(re.sub(r"^\{what\}:\s*", "", known.message))  # "{what}: ..."
    if (len(text) < 20 or text.startswith("…")) and known.hints[0]:
        text = _clause(known.hints[0])
    return textwrap.shorten(text, 110, placeholder=" …")


def _clause(text: str) -> str:
    text = " ".join(text.split())
    for name, said in (("what", "the result"), ("file", "the file"), ("exercise", "it")):
        text = re.sub(r"\{" + name + r"(:[^}]*)?\}", said, text)
    text = re.sub(r"\{[^}]*\}", "…", text)
    text = text[:1].upper() + text[1:]
    return re.split(r"(?<=[^.\d])[.:;](?=\s|$)", text, maxsplit=1)[0]


def mistakes_of(data: ClassData, student: str) -> dict[tuple[str, str], list[Row]]:
    """A student's mistakes: {(module, misconception): the checks that showed it}."""
    out: dict[tuple[str, str], list[Row]] = {}
    for r in data.rows_of(student):
        if r.kind in (MISTAKE, NOTE):
            out.setdefault((r.module, r.misconception), []).append(r)
    return out


def failed_checks(data: ClassData) -> list[tuple[str, int, int]]:
    """(check, students who lost points to a mistake, students it judged), most failed
    first; unattempted work and grader problems are counted apart."""
    lost: collections.Counter[str] = collections.Counter()
    graded: collections.Counter[str] = collections.Counter()
    for r in data.rows:
        if r.kind in (PASSED, NOTE, MISTAKE):
            graded[r.check] += 1
        if r.kind == MISTAKE and r.score < r.max_score:
            lost[r.check] += 1
    return sorted(((c, lost[c], graded[c]) for c in graded if lost[c]), key=lambda t: (-t[1], t[0]))


def problems(data: ClassData, student: str | None = None) -> list[tuple[str, str, str, int, str]]:
    """(student, module, problem, checks, first message): what the grader could not judge
    (of everyone, or of `student`)."""
    found: dict[tuple[str, str, str], list[Row]] = collections.defaultdict(list)
    for r in data.rows if student is None else data.rows_of(student):
        if r.problem:
            found[r.student, r.module, r.problem].append(r)
    return [
        (s, m, p, len(rows), rows[0].message)
        for (s, m, p), rows in sorted(found.items(), key=lambda kv: _order(kv[0]))
    ]


def _order(key: tuple[str, str, str]) -> tuple:
    modules = registry.modules()
    s, m, p = key
    return (s, modules.index(m) if m in modules else len(modules), p)


def unattempted(data: ClassData) -> list[tuple[str, list[str], list[str], list[str]]]:
    """(student, modules left as stubs, modules partly stubbed, modules not handed in), for
    every student who handed in something."""
    absent = set(data.absent())
    out = []
    for s in data.students:
        if s in absent:
            continue
        stubs, partly, missing = [], [], []
        for m in data.modules + sorted(set(data.totals.get(s, {})) - set(data.modules)):
            state = data.state(s, m)
            if state.score is None:
                missing.append(m)
            elif state.label == "not attempted":
                stubs.append(m)
            elif state.kinds[NOT_ATTEMPTED]:
                partly.append(f"{m} ({state.kinds[NOT_ATTEMPTED]} checks)")
        if stubs or partly or missing:
            out.append((s, stubs, partly, missing))
    return out


def module_max(data: ClassData) -> dict[str, float]:
    best: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for r in data.rows:
        best[r.module][r.check] = r.max_score
    return {m: sum(v.values()) for m, v in best.items()}


def similar(data: ClassData, threshold: float | None = None) -> list:
    """Per module with submitted code, similarity.compare: groups and pairs for review."""
    out = []
    for module in sorted(data.code, key=_module_order):
        files = data.code[module]
        if len(files) < 2:
            continue
        out.append(
            similarity.compare(
                module,
                files,
                stub=data.stubs.get(module, ""),
                reference=data.references.get(module, ""),
                threshold=similarity.THRESHOLD if threshold is None else threshold,
            )
        )
    return out


def _module_order(m: str) -> tuple[int, str]:
    modules = registry.modules()
    return (modules.index(m) if m in modules else len(modules), m)


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
        ax.set_title("Score distribution per module (students who handed it in)")
        fig.savefig(out / "scores.png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append("scores.png")
    found = misconceptions(data)[:15]
    bars = {
        "misconceptions.png": (
            [f"{ex}: {mis}" for ex, mis, _, _ in found],
            [100 * share for *_, share in found],
            "% of the students who attempted the module",
            "Most common misconceptions",
        ),
        "failed-checks.png": (
            [textwrap.shorten(c, 70, placeholder="...") for c, *_ in failed_checks(data)[:15]],
            [100 * n / g for _, n, g in failed_checks(data)[:15]],
            "% of the students it judged who lost points to a mistake",
            "Most-failed checks",
        ),
    }
    for name, (labels, values, xlabel, plot_title) in bars.items():
        if labels:  # the largest bar on top
            fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.5))
            ax.barh(labels[::-1], values[::-1])
            ax.set_xlabel(xlabel)
            ax.set_xlim(0, 100)
            ax.set_title(plot_title)
            fig.savefig(out / name, dpi=100, bbox_inches="tight")
            plt.close(fig)
            written.append(name)
    return written


def write_long_csv(data: ClassData, path: Path) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(LONG_COLUMNS)
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


def _esc(x: object) -> str:
    return html.escape(str(x))


def _table(
    head: list[str], rows: Sequence[Sequence[object]], raw: bool = False, css: str = ""
) -> str:
    """An HTML table; `raw`: the cells are HTML already (escaped by the caller)."""
    cells = "".join(f"<th>{_esc(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if raw else _esc(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    cls = f" class='{css}'" if css else ""
    table = f"<table{cls}><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='wide'>{table}</div>"


STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "div.wide{overflow-x:auto}table{border-collapse:collapse;margin:.6em 0;font-size:14px}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.num,th.num{text-align:right}img{max-width:100%}"
    "table.grid td{text-align:center;white-space:nowrap}table.grid td:first-child"
    "{text-align:left}.full{background:#c8e6c9}.partial{background:#fff3c4}"
    ".zero{background:#ffcdd2}.todo{background:#e0e0e0;color:#555}.problem{background:#d1c4e9}"
    ".absent{color:#999}.legend span{display:inline-block;padding:1px 8px;margin-right:6px;"
    "border:1px solid #ccc}.flag{color:#b00;font-weight:bold}p.note{color:#555;font-size:13px}"
    "code{font-size:13px}"
)
LEGEND = (
    "<p class='legend'>Cells: points / maximum. <span class='full'>full marks</span>"
    "<span class='partial'>some points lost</span><span class='zero'>no points</span>"
    "<span class='todo'>not attempted (stub)</span><span class='problem'>grader problem "
    "(timeout, import error, crash)</span><span class='absent'>— not handed in</span></p>"
)


def _page(title_text: str, body: list[str]) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_esc(title_text)}</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def page_name(student: str) -> str:
    """A student's page under students/: their name where it is a safe file name."""
    safe = re.sub(r"[^A-Za-z0-9._@+-]", "_", student).strip(".") or "student"
    if safe != student:
        safe += "-" + hashlib.sha256(student.encode()).hexdigest()[:8]
    return f"{safe}.html"


def _cell(state: ModuleState) -> str:
    if state.score is None:
        return "—"
    text = f"{state.score:g} / {state.max_score:g}"
    if state.label not in ("graded", "not attempted"):
        text += f" ({state.label})"
    elif state.label == "graded" and state.problems:  # some checks not judged
        text += f" ({state.kinds[PROBLEM]} {state.problems[0]})"
    return text


def _section(title: str, body: list[str], found: object, empty: str) -> list[str]:
    """An <h2> section of the class page: `body` when something was `found`, else `empty`
    (a sentence saying there is nothing)."""
    return [f"<h2>{title}</h2>", *(body if found else [f"<p>{empty}</p>"])]


def _link(href: str, text: str) -> str:
    return f"<a href='{_esc(href)}'>{_esc(text)}</a>"


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(start).resolve())).as_posix()


def _diff_name(module: str, a: str, b: str) -> str:
    return f"{module}--{page_name(a)[:-5]}--{page_name(b)[:-5]}.html"


def write_similar_csv(found: list, path: Path) -> None:
    """similar.csv: every group member and pair flagged (the page shows the first ones)."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["module", "student", "other", "score", "what"])
        for ms in found:
            for g in ms.groups:
                what = "identical files" if g.exact else "identical after normalisation"
                what += f"; the same code as solutions/{ms.module}.py" if g.reference else ""
                for s in g.students[1:]:
                    out.writerow([ms.module, g.students[0], s, "1.00", what])
            for p in ms.pairs:
                for a in (p.a, *p.a_also):
                    for b in (p.b, *p.b_also):
                        out.writerow([ms.module, a, b, f"{p.score:.2f}", "similar"])


def write_similar(data: ClassData, found: list, out: Path) -> dict[tuple[str, str, str], str]:
    """similar/<module>--<a>--<b>.html for each pair to review; {(module, a, b): file}."""
    folder = out / "similar"
    shutil.rmtree(folder, ignore_errors=True)  # the report's own folder: no stale pairs
    folder.mkdir(parents=True)
    pages = {}
    pairs = []
    for ms in found:
        for g in ms.groups:
            what = "identical files" if g.exact else "identical after normalisation"
            shown = g.students[1 : 1 + PAGES_PER_GROUP]
            pairs += [(ms.module, g.students[0], s, what) for s in shown]
        shown_pairs = ms.pairs[:PAIRS_SHOWN]
        pairs += [(ms.module, p.a, p.b, f"similarity {p.score:.2f}") for p in shown_pairs]
    write_similar_csv(found, out / "similar.csv")
    for module, a, b, what in pairs:
        name = _diff_name(module, a, b)
        text_a, text_b = data.code[module][a], data.code[module][b]
        (folder / name).write_text(
            similarity.side_by_side(a, b, text_a, text_b, f"{module}.py: {a} and {b} ({what})")
        )
        pages[module, a, b] = f"similar/{name}"
    return pages


PAGES_PER_GROUP, PAIRS_SHOWN, NAMES_SHOWN = 8, 100, 24  # the rest: similar.csv


def _few(names: list[str]) -> str:
    more = len(names) - NAMES_SHOWN
    return ", ".join(names[:NAMES_SHOWN]) + (f" and {more} more (similar.csv)" if more > 0 else "")


def _names(names: list[str], prefix: str) -> str:
    shown = ", ".join(_link(prefix + "students/" + page_name(s), s) for s in names[:NAMES_SHOWN])
    more = len(names) - NAMES_SHOWN
    return shown + (f" and {more} more (similar.csv)" if more > 0 else "")


def _similar_section(found: list, pages: dict, prefix: str = "") -> list[str]:
    parts = [
        "<p class='note'>Flags for review, never a finding: the grades above do not change. "
        "Files are compared per module after normalisation (comments, layout and docstrings "
        "dropped, variable names replaced by placeholders) and with the stub's own lines "
        f"taken out, so only what each student wrote is compared; files with fewer than "
        f"{similarity.MIN_TOKENS} tokens of their own are not compared. Score: "
        f"{_esc(similarity.measure())}, 1 = the same code; pairs at or above "
        f"{found[0].threshold if found else similarity.THRESHOLD:g} are listed.</p>"
    ]
    rows = []
    for ms in found:
        for g in ms.groups:
            kind = "identical files" if g.exact else "identical after normalisation"
            if g.reference:
                kind += f"; the same code as solutions/{ms.module}.py"
            links = [
                _link(prefix + pages[ms.module, g.students[0], s], f"{g.students[0]} ↔ {s}")
                for s in g.students[1:]
                if (ms.module, g.students[0], s) in pages
            ]
            who = _names(g.students, prefix)
            rows.append([_esc(ms.module), who, "1.00", _esc(kind), " ".join(links)])
        for p in ms.pairs[:PAIRS_SHOWN]:
            who = ", ".join(
                _link(prefix + "students/" + page_name(s), s)
                + (f" (= {_esc(_few(also))})" if also else "")
                for s, also in ((p.a, p.a_also), (p.b, p.b_also))
            )
            link = _link(prefix + pages[ms.module, p.a, p.b], "side by side")
            rows.append([_esc(ms.module), who, f"{p.score:.2f}", "similar", link])
        if len(ms.pairs) > PAIRS_SHOWN:
            more = f"and {len(ms.pairs) - PAIRS_SHOWN} more pairs: similar.csv"
            rows.append([_esc(ms.module), _esc(more), "", "", ""])
    compared = ", ".join(f"{ms.module}: {ms.compared}" for ms in found)
    if rows:
        parts.append(_table(["module", "students", "score", "what", "compare"], rows, raw=True))
    else:
        parts.append("<p>No pair of submissions reaches the threshold.</p>")
    if compared:
        parts.append(f"<p class='note'>Students compared per module: {_esc(compared)}.</p>")
    return parts


def write_student(data: ClassData, student: str, out: Path, found: list, pages: dict) -> Path:
    folder = out / "students"
    folder.mkdir(parents=True, exist_ok=True)
    maxima = data._index()[1]
    states = [data.state(student, m) for m in data.modules]
    total = sum(s.score or 0.0 for s in states)
    body = [
        "<p><a href='../index.html'>← class report</a></p>",
        f"<h1>{_esc(student)}</h1>",
        f"<p>Total: <b>{total:g} / {sum(maxima.values()):g}</b> points.",
    ]
    links = [_link(_rel(p, folder), label) for label, p in data.feedback.get(student, [])]
    body[-1] += (" Their feedback: " + ", ".join(links) + ".") if links else ""
    body[-1] += "</p>"
    why = [w for who, w in data.not_graded if who == student]
    if why:
        body.append(f"<p class='flag'>Not graded: {_esc('; '.join(why))}</p>")
    rows = []
    for s in states:
        rows.append(
            [
                _esc(s.module),
                f"<span class='{s.css}'>{_esc(_cell(s))}</span>",
                _esc(s.label),
                s.kinds[MISTAKE],
                s.kinds[NOT_ATTEMPTED],
                s.kinds[PROBLEM],
            ]
        )
    body += [
        "<h2>Scores per module</h2>",
        _table(
            [
                "module",
                "points",
                "state",
                "checks lost to mistakes",
                "not attempted",
                "grader problems",
            ],
            rows,
            raw=True,
        ),
    ]
    mine = data.rows_of(student)
    body.append("<h2>Mistakes (named misconceptions)</h2>")
    named = mistakes_of(data, student)
    if named:
        rows = [
            [
                _esc(module),
                f"<code>{_esc(mis or '—')}</code>",
                _esc(title(mis)),
                f"{sum(r.max_score - r.score for r in rs):g}"
                + (" (advice)" if all(r.kind == NOTE for r in rs) else ""),
                "<br>".join(_esc(r.check.split(": ", 1)[-1]) for r in rs),
                _esc(textwrap.shorten(rs[0].message, 240, placeholder=" …")),
            ]
            for (module, mis), rs in named.items()
        ]
        body.append(
            _table(
                ["module", "misconception", "title", "points lost", "checks", "their feedback"],
                rows,
                raw=True,
            )
        )
    else:
        body.append("<p>None.</p>")
    body.append("<h2>Not attempted</h2>")
    todo = collections.defaultdict(list)
    for r in mine:
        if r.kind == NOT_ATTEMPTED:
            todo[r.module].append(r)
    if todo:
        rows = [
            [m, len(rs), f"{sum(r.max_score for r in rs):g}", WHY_TODO.get(rs[0].misconception, "")]
            for m, rs in todo.items()
        ]
        body.append(_table(["module", "checks", "points", "why"], rows))
    else:
        body.append("<p>Everything handed in was attempted.</p>")
    body.append("<h2>Grader problems (not judged)</h2>")
    mine_problems = problems(data, student)
    if mine_problems:
        rows = [
            [m, p, n, textwrap.shorten(msg, 240, placeholder=" …")]
            for _, m, p, n, msg in mine_problems
        ]
        body.append(_table(["module", "problem", "checks", "first message"], rows))
    else:
        body.append("<p>None.</p>")
    flagged = [
        ms
        for ms in found
        if any(student in g.students for g in ms.groups)
        or any(student in (p.a, p.b, *p.a_also, *p.b_also) for p in ms.pairs)
    ]
    if flagged:
        body.append("<h2>Similar submissions (for review, not a finding)</h2>")
        only = [
            dataclasses.replace(
                ms,
                groups=[g for g in ms.groups if student in g.students],
                pairs=[p for p in ms.pairs if student in (p.a, p.b, *p.a_also, *p.b_also)],
            )
            for ms in flagged
        ]
        body += _similar_section(only, pages, prefix="../")[1:2]
    path = folder / page_name(student)
    path.write_text(_page(f"{student}: class report", body))
    return path


def write(data: ClassData, out: Path, threshold: float | None = None) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(data, out)
    write_long_csv(data, out / "long.csv")
    write_canvas_csv(data, out / "canvas.csv")
    found = similar(data, threshold)
    pages = write_similar(data, found, out)
    maxima = module_max(data)
    absent = data.absent()
    summary = []
    for m in data.modules:
        states = [data.state(s, m) for s in data.students]
        handed = [s for s in states if s.score is not None]
        tried = [s for s in handed if s.label != "not attempted"]
        scores = [s.score for s in tried if s.score is not None]
        mean = sum(scores) / len(scores) if scores else 0.0
        full = sum(s == maxima[m] for s in scores)
        summary.append(
            [
                m,
                f"{maxima[m]:g}",
                len(handed),
                len(tried),
                f"{mean:.1f}",
                full,
                sum(s.label == "not attempted" for s in handed),
                sum(bool(s.kinds[PROBLEM]) for s in handed),
            ]
        )
    parts = [
        "<h1>Attention Lab: class report</h1>",
        f"<p>{_esc(data.source)}; {len(data.students)} students"
        + (f" ({len(absent)} with no submission)" if absent else "")
        + ". Also here: <a href='long.csv'>long.csv</a> (one row per student and check), "
        "<a href='canvas.csv'>canvas.csv</a> (Canvas gradebook import).</p>",
        "<p class='note'>Lost points are of three kinds, counted apart: <b>mistakes</b> "
        "(a misconception the checks named, or a difference they could not name), work "
        "<b>not attempted</b> (a stub left as given, a missing file) and <b>grader problems</b> "
        "(a timeout, an import error, a crash, a check that did not run). The misconception "
        "tables count mistakes only.</p>",
        "<h2>Scores per module</h2>",
        _table(
            [
                "module",
                "points",
                "handed in",
                "attempted",
                "mean (attempted)",
                "full marks",
                "not attempted",
                "with grader problems",
            ],
            summary,
        ),
    ]
    if "scores.png" in plots:
        parts.append("<img src='scores.png' alt='score distribution per module'>")
    parts.append("<h2>Students</h2>")
    grid = []
    present = [s for s in data.students if s not in absent]
    flagged: collections.Counter[str] = collections.Counter()  # groups and pairs per student
    for ms in found:
        for g in ms.groups:
            flagged.update(set(g.students))
        for p in ms.pairs:
            flagged.update({p.a, p.b, *p.a_also, *p.b_also})
    for s in present:
        states = [data.state(s, m) for m in data.modules]
        mistakes = sum(1 for rs in mistakes_of(data, s).values() if rs[0].kind == MISTAKE)
        flags = flagged[s]
        grid.append(
            [_link("students/" + page_name(s), s)]
            + [f"<span class='{st.css}'>{_esc(_cell(st))}</span>" for st in states]
            + [
                f"{sum(st.score or 0.0 for st in states):g}",
                str(mistakes),
                f"<span class='flag'>{flags}</span>" if flags else "",
            ]
        )
    grid_html = _table(
        ["student", *data.modules, "total", "mistakes", "similarity flags"],
        grid,
        raw=True,
        css="grid",
    )
    grid_html = re.sub(  # each cell's colour on the cell itself
        r"<td><span class='(\w+)'>([^<]*)</span></td>", r"<td class='\1'>\2</td>", grid_html
    )
    parts += [
        f"<p>Total: of {sum(maxima.values()):g} points; mistakes: distinct misconceptions "
        "(module and id); similarity flags: groups and pairs to review (below). Each name "
        "opens the student's page.</p>",
        grid_html,
        LEGEND,
    ]
    found_mis = misconceptions(data)
    rows = [[ex, mis, title(mis), n, f"{100 * share:.0f}%"] for ex, mis, n, share in found_mis[:40]]
    body = [
        _table(["exercise", "misconception", "title", "students", "share"], rows),
        "<p class='note'>share: of the students who attempted the module (stubs and "
        "missing files not counted).</p>",
        "<img src='misconceptions.png' alt='most common misconceptions'>",
    ]
    parts += _section("Most common misconceptions, per exercise", body, found_mis, "None recorded.")
    failed = failed_checks(data)
    rows = [[c, n, g, f"{100 * n / g:.0f}%"] for c, n, g in failed[:30]]
    body = [
        _table(["check", "lost points", "judged", "share"], rows),
        "<img src='failed-checks.png' alt='most-failed checks'>",
    ]
    parts += _section("Most-failed checks", body, failed, "No check lost points to a mistake.")
    todo = unattempted(data)
    rows = [
        [_link("students/" + page_name(s), s), _esc(", ".join(st) or "—"),
         _esc(", ".join(pt) or "—"), _esc(", ".join(mi) or "—")]
        for s, st, pt, mi in todo
    ]  # fmt: skip
    body = [_table(["student", "left as stubs", "partly stubs", "not handed in"], rows, raw=True)]
    parts += _section(
        "Not attempted", body, todo, "Every student attempted every module they handed in."
    )
    found_problems = problems(data)
    rows = [
        [_link("students/" + page_name(s), s), _esc(m), f"<code>{_esc(p)}</code>", n,
         _esc(textwrap.shorten(msg, 200, placeholder=" …"))]
        for s, m, p, n, msg in found_problems
    ]  # fmt: skip
    body = [
        _table(["student", "module", "problem", "checks", "first message"], rows, raw=True),
        "<p class='note'>Checks the grader could not judge: they scored 0 and are not "
        "counted as misconceptions. A timeout or an import error is usually the student's "
        "code (an endless loop, a syntax error); a grader-error is the kit's.</p>",
    ]
    parts += _section(
        "Grader problems", body, found_problems, "None: every check ran to a verdict."
    )
    parts.append("<h2>Students not graded</h2>")
    if absent:
        parts.append(f"<p>No submission at all ({len(absent)}): {_esc(', '.join(absent))}.</p>")
    others = [(who, why) for who, why in data.not_graded if who not in absent]
    if others:
        parts.append(_table(["who", "why"], [list(x) for x in others]))
    if not absent and not others:
        parts.append("<p>Everyone was graded.</p>")
    parts.append("<h2>Similar submissions</h2>")
    if found:
        parts += _similar_section(found, pages)
    else:
        parts.append(
            "<p class='note'>Not compared: the submitted files were not found (batch: "
            "pass SUBMISSIONS=the folder batch graded).</p>"
        )
    shutil.rmtree(out / "students", ignore_errors=True)  # the report's own folder
    for s in present:
        write_student(data, s, out, found, pages)
    index = out / "index.html"
    index.write_text(_page("Class report", parts))
    return index
