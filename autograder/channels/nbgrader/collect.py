"""`make collect`: downloads -> course/submitted/<student>/<assignment>/, never stopping a class.

Downloads go in course/downloaded/<assignment>/archive/: notebooks named by the [collect]
pattern of course.toml (default "<student>_<notebook>.ipynb"), or one "<student>.zip" per
student holding notebooks. Each file is read, and:

- a Canvas-style "LATE_" mark (a prefix, or "_LATE_" inside the name) and a resubmission
  suffix ("-1", "-2", " (1)") are taken off the name before the pattern is matched;
- a name that fits the pattern and names an assignment is collected as it says;
- a name that does not fit (carol_masks_final.ipynb) is mapped when the notebook's own nbgrader
  metadata names exactly one assignment and the student can be read off the name (the part
  before the assignment's name, or before the first "_", or the .zip's name);
- anything else is skipped, with the reason, in course/collect-report.txt (and .json);
- two files for one student and assignment: the latest resubmission wins (the higher "-N",
  then the later timestamp); the other is reported as superseded.

The timestamp of each submission is the download's own (the file's modification time, or the
.zip member's date, read as UTC); it goes in timestamp.txt, where nbgrader reads it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from ...core.course_config import CourseConfig

REPORT = "collect-report"
MAX_NOTEBOOK_BYTES = 20 << 20
_LATE = re.compile(r"(^LATE_|_LATE(?=_|\.|$))", re.IGNORECASE)
_RESUBMIT = re.compile(r"(?:-(\d+)| \((\d+)\))$")
_STUDENT = re.compile(r"[^A-Za-z0-9._@+-]")


@dataclass
class Item:
    """One downloaded notebook and what collection made of it."""

    source: str  # shown in the report: archive/<file>[:member]
    student: str = ""
    assignment: str = ""
    timestamp: str = ""  # ISO, UTC
    late_mark: bool = False
    resubmission: int = 0
    how: str = ""  # "name", "metadata", "zip"
    action: str = ""  # "collected" | "mapped" | "skipped" | "superseded"
    why: str = ""
    notes: list[str] = field(default_factory=list)


def _clean(name: str) -> tuple[str, bool, int]:
    """'LATE_carol_masks-1.ipynb' -> ('carol_masks.ipynb', True, 1)."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    late = bool(_LATE.search(stem))
    stem = _LATE.sub("", stem)
    number = 0
    match = _RESUBMIT.search(stem)
    if match:
        number = int(match.group(1) or match.group(2))
        stem = stem[: match.start()]
    return (stem + ("." + ext if ext else "")), late, number


def grade_ids(nb) -> set[str]:
    return {
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if isinstance(c.metadata.get("nbgrader"), dict) and c.metadata["nbgrader"].get("grade_id")
    }


def assignment_ids(root: Path) -> dict[str, set[str]]:
    """{assignment: the grade_ids of its source notebook(s)}."""
    found = {}
    for folder in sorted((Path(root) / "source").glob("*")):
        ids: set[str] = set()
        for path in folder.glob("*.ipynb"):
            ids |= grade_ids(nbformat.read(path, as_version=4))
        if ids:
            found[folder.name] = ids
    return found


def by_metadata(nb, known: dict[str, set[str]]) -> tuple[str, str]:
    """(assignment, "") when the notebook's nbgrader cells fit one assignment best, else
    ("", why)."""
    ids = grade_ids(nb)
    if not ids:
        return "", "the notebook holds no nbgrader cells (not a notebook of this course?)"
    overlap = {a: len(ids & src) / len(ids) for a, src in known.items()}
    best = max(overlap.values(), default=0.0)
    winners = [a for a, share in overlap.items() if share == best]
    if best < 0.5:
        return "", "its nbgrader cells fit no assignment of this course"
    if len(winners) > 1:
        return "", f"its nbgrader cells fit {' and '.join(winners)} equally"
    return winners[0], ""


def _student_from(stem: str, assignment: str) -> str:
    """'carol_masks_final' with assignment masks -> 'carol'; 'carol_final' -> 'carol'."""
    parts = stem.split("_")
    if assignment in parts and parts.index(assignment) > 0:
        return "_".join(parts[: parts.index(assignment)])
    return parts[0] if len(parts) > 1 else ""


def _utc(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()


def _downloads(archive: Path):
    """(display name, file name, bytes or None + why, timestamp, zip's student) per notebook."""
    for path in sorted(archive.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        shown = f"{archive.parent.name}/archive/{path.name}"
        if path.suffix.lower() == ".zip":
            try:
                with zipfile.ZipFile(path) as z:
                    members = [
                        m
                        for m in z.infolist()
                        if m.filename.lower().endswith(".ipynb")
                        and not m.is_dir()
                        and "__MACOSX" not in m.filename
                        and ".ipynb_checkpoints" not in m.filename
                    ]
                    if not members:
                        yield shown, path.name, None, "the .zip holds no notebook", "", ""
                    for m in members:
                        when = dt.datetime(*m.date_time, tzinfo=dt.UTC).isoformat()
                        if m.file_size > MAX_NOTEBOOK_BYTES:
                            yield f"{shown}:{m.filename}", "", None, "larger than 20 MB", when, ""
                            continue
                        data = z.read(m)
                        yield f"{shown}:{m.filename}", Path(m.filename).name, data, "", when, path
            except (zipfile.BadZipFile, OSError) as e:
                yield shown, path.name, None, f"the .zip cannot be read ({e})", "", ""
        elif path.suffix.lower() == ".ipynb":
            when = _utc(path.stat().st_mtime)
            if path.stat().st_size > MAX_NOTEBOOK_BYTES:
                yield shown, path.name, None, "larger than 20 MB", when, ""
            else:
                yield shown, path.name, path.read_bytes(), "", when, ""
        else:
            yield shown, path.name, None, "not a notebook (.ipynb) or a .zip", "", ""


def plan(root: Path, config: CourseConfig, assignments: list[str]) -> list[tuple[Item, bytes]]:
    """Decide, for every download of `assignments`, who and what it is (nothing is written)."""
    root = Path(root)
    known = assignment_ids(root)
    pattern = re.compile(config.pattern)
    items: list[tuple[Item, bytes]] = []
    for folder in assignments:
        archive = root / "downloaded" / folder / "archive"
        if not archive.is_dir():
            continue
        for shown, name, data, problem, when, zip_path in _downloads(archive):
            item = Item(source=shown, timestamp=when)
            if data is None:
                item.action, item.why = "skipped", problem
                items.append((item, b""))
                continue
            try:
                nb = nbformat.reads(data.decode("utf-8"), as_version=4)
            except Exception as e:  # noqa: BLE001 - any unreadable file is reported, not fatal
                item.action = "skipped"
                item.why = f"not a readable notebook ({type(e).__name__})"
                items.append((item, b""))
                continue
            cleaned, item.late_mark, item.resubmission = _clean(name)
            zip_student = ""
            if zip_path:
                zip_student, late, number = _clean(Path(zip_path).name)
                zip_student = zip_student.rsplit(".", 1)[0]
                item.late_mark |= late
                item.resubmission = max(item.resubmission, number)
            meta_assignment, meta_why = by_metadata(nb, known)
            match = pattern.search(cleaned)
            file_id = match.group("file_id").removesuffix(".ipynb") if match else ""
            stem = cleaned.rsplit(".", 1)[0]
            if zip_path and file_id not in known:
                file_id = stem if stem in known else file_id
            if file_id in known and (zip_student or match):
                item.assignment = file_id
                item.student = zip_student or (match.group("student_id") if match else "")
                item.how, item.action = ("zip" if zip_student else "name"), "collected"
                if meta_assignment and meta_assignment != file_id:
                    item.assignment, item.how, item.action = meta_assignment, "metadata", "mapped"
                    item.notes.append(
                        f"named {file_id}, but its nbgrader cells are those of {meta_assignment}"
                    )
            elif meta_assignment:
                student = zip_student or _student_from(stem, meta_assignment)
                if not student:
                    item.action = "skipped"
                    item.why = (
                        f"the name does not fit the pattern and the student cannot be read off "
                        f"it (the metadata says {meta_assignment})"
                    )
                else:
                    item.student, item.assignment = student, meta_assignment
                    item.how, item.action = "metadata", "mapped"
                    item.notes.append(
                        f"the name does not fit the pattern; its nbgrader cells are those of "
                        f"{meta_assignment}, the student read off the name"
                    )
            else:
                item.action = "skipped"
                fits = "fits the pattern but names no assignment" if match else "fits no pattern"
                item.why = f"the name {fits}, and {meta_why}"
            if item.student:
                safe = _STUDENT.sub("_", item.student).strip("._")
                if safe != item.student:
                    item.notes.append(f"student id {item.student!r} written as {safe!r}")
                item.student = safe
                if not safe:
                    item.action, item.why = "skipped", "the student id is empty"
            if item.assignment and item.assignment != folder and item.action != "skipped":
                item.notes.append(f"found in downloaded/{folder}/, it is {item.assignment}")
            if item.late_mark:
                item.notes.append("marked LATE by the platform")
            if item.resubmission:
                item.notes.append(f"resubmission {item.resubmission}")
            items.append((item, data))
    _supersede(items)
    return items


def _supersede(items: list[tuple[Item, bytes]]) -> None:
    best: dict[tuple[str, str], Item] = {}
    for item, _ in items:
        if item.action not in ("collected", "mapped"):
            continue
        key = (item.student, item.assignment)
        rank = (item.resubmission, item.timestamp)
        other = best.get(key)
        if other is None or rank > (other.resubmission, other.timestamp):
            if other is not None:
                other.action, other.why = "superseded", f"a later one was collected: {item.source}"
            best[key] = item
        else:
            item.action, item.why = "superseded", f"a later one was collected: {other.source}"


def collect(root: Path, config: CourseConfig, assignments: list[str]) -> list[Item]:
    """Write course/submitted/ from the downloads and the report; return every item."""
    root = Path(root)
    items = plan(root, config, assignments)
    for item, data in items:
        if item.action not in ("collected", "mapped"):
            continue
        dest = root / "submitted" / item.student / item.assignment
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        (dest / f"{item.assignment}.ipynb").write_bytes(data)
        if item.timestamp:
            stamp = dt.datetime.fromisoformat(item.timestamp)
            (dest / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f %Z") + "\n")
    records = [i for i, _ in items]
    write_report(root, records)
    return records


def report_text(items: list[Item]) -> str:
    lines = []
    counts = {a: sum(i.action == a for i in items) for a in ("collected", "mapped")}
    counts["skipped"] = sum(i.action in ("skipped", "superseded") for i in items)
    lines.append(
        f"collect: {counts['collected']} collected as named, {counts['mapped']} mapped by their "
        f"nbgrader metadata, {counts['skipped']} skipped or superseded"
    )
    for item in items:
        who = f"{item.student or '?'} / {item.assignment or '?'}"
        extra = f" ({'; '.join(item.notes)})" if item.notes else ""
        if item.action in ("collected", "mapped"):
            lines.append(f"  {item.action:<10} {item.source} -> {who}{extra}")
        else:
            lines.append(f"  {item.action:<10} {item.source}: {item.why}{extra}")
    return "\n".join(lines) + "\n"


def write_report(root: Path, items: list[Item]) -> None:
    (root / f"{REPORT}.txt").write_text(report_text(items))
    data = [asdict(i) for i in items]
    (root / f"{REPORT}.json").write_text(json.dumps(data, indent=1) + "\n")


def read_report(root: Path) -> list[Item]:
    path = Path(root) / f"{REPORT}.json"
    if not path.is_file():
        return []
    try:
        return [Item(**d) for d in json.loads(path.read_text())]
    except (ValueError, TypeError):
        return []
