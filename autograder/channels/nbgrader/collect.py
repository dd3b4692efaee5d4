"""`make collect`: downloads -> course/submitted/<student>/<assignment>/, never stopping a class.

Downloads go in course/downloaded/<assignment>/archive/: notebooks named by the [collect]
pattern of course.toml (default "<student>_<notebook>.ipynb"), one "<student>.zip" or folder
per student holding notebooks, or the files (or folders) Canvas, Moodle and Blackboard name
after the student (autograder/channels/lms.py reads their names). Each file is read, and:

- a learning platform's name gives the student (Canvas's user id, Moodle's id, Blackboard's
  username, or the name) and its LATE mark; the assignment is the student's own file name,
  or the notebook's nbgrader metadata, or the folder it was downloaded into;
- with a roster (course/roster.csv, or nbgrader's database of students: load_roster), the
  student is the roster's: an LMS user id resolves to the roster's student id, and a name
  the roster does not hold is reported (who, which file, what to do) and not collected;
- a Canvas-style "LATE_" mark (a prefix, or "_LATE_" inside the name) and a resubmission
  suffix ("-1", "-2", " (1)") are taken off the name before the pattern is matched;
- a name that fits the pattern and names an assignment is collected as it says;
- a name that does not fit (carol_masks_final.ipynb) is mapped when the notebook's own nbgrader
  metadata names exactly one assignment and the student can be read off the name (the part
  before the assignment's name, or before the first "_", or the .zip's name);
- anything else is skipped, with the reason, in course/collect-report.txt (and .json);
- two files for one student and assignment: the latest resubmission wins (the higher "-N",
  then the later timestamp); the other is reported as superseded.

The timestamp of each submission is the download's own (the file's modification time, the
.zip member's date, or Blackboard's attempt time in the name, read as UTC); it goes in
timestamp.txt, where nbgrader reads it.
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
from .. import lms
from .records import COURSE_ID

REPORT = "collect-report"
MAX_NOTEBOOK_BYTES = 20 << 20
_LATE = re.compile(r"(^LATE_|_LATE(?=_|\.|$))", re.IGNORECASE)
_RESUBMIT = re.compile(r"(?:-(\d+)| \((\d+)\))$")


@dataclass
class Item:
    """One downloaded notebook and what collection made of it."""

    source: str  # shown in the report: archive/<file>[:member]
    student: str = ""
    assignment: str = ""
    timestamp: str = ""  # ISO, UTC
    late_mark: bool = False
    resubmission: int = 0
    how: str = ""  # "name", "metadata", "zip", or the platform: "canvas", "moodle"...
    action: str = ""  # "collected" | "mapped" | "skipped" | "superseded"
    why: str = ""
    notes: list[str] = field(default_factory=list)
    platform: str = ""  # the learning platform whose name the download has
    lms_id: str = ""  # the platform's user id in the name (Canvas, Moodle)
    unknown: str = ""  # a student the roster does not hold, as the download names them


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


def _notebook_of(path: Path, shown: str, when: str, container):
    """(shown, name, bytes or None, why, timestamp, container) of one notebook file."""
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return shown, path.name, None, "larger than 20 MB", when, container
    return shown, path.name, path.read_bytes(), "", when, container


def _downloads(archive: Path):
    """(display name, file name, bytes or None, why, timestamp, container) per notebook; the
    container is the .zip or the folder (Moodle's, one per student) it came in, or None."""
    for path in sorted(archive.iterdir()):
        if path.name.startswith("."):
            continue
        shown = f"{archive.parent.name}/archive/{path.name}"
        if path.is_dir():  # a folder per student (Moodle's "download in folders")
            found = [
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and p.suffix.lower() == ".ipynb"
                and ".ipynb_checkpoints" not in p.parts
                and not p.name.startswith(".")
            ]
            if not found:
                yield shown, path.name, None, "the folder holds no notebook", "", None
            for p in found:
                inner = f"{shown}/{p.relative_to(path).as_posix()}"
                yield _notebook_of(p, inner, _utc(p.stat().st_mtime), path)
        elif not path.is_file():
            continue
        elif path.suffix.lower() == ".zip":
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
                        yield shown, path.name, None, "the .zip holds no notebook", "", None
                    for m in members:
                        when = dt.datetime(*m.date_time, tzinfo=dt.UTC).isoformat()
                        if m.file_size > MAX_NOTEBOOK_BYTES:
                            yield f"{shown}:{m.filename}", "", None, "larger than 20 MB", when, None
                            continue
                        data = z.read(m)
                        yield f"{shown}:{m.filename}", Path(m.filename).name, data, "", when, path
            except (zipfile.BadZipFile, OSError) as e:
                yield shown, path.name, None, f"the .zip cannot be read ({e})", "", None
        elif path.suffix.lower() == ".ipynb":
            yield _notebook_of(path, shown, _utc(path.stat().st_mtime), None)
        else:
            yield shown, path.name, None, "not a notebook (.ipynb) or a .zip", "", None


def load_roster(root: Path) -> lms.Roster:
    """The course's roster: root/roster.csv, and the students of nbgrader's database that
    were added with a name, an e-mail or an LMS id (`nbgrader db student add/import`);
    those autograde --create added on the fly carry none and are no roster. Empty: none."""
    root = Path(root)
    path = root / lms.ROSTER
    roster = lms.read_csv(path) if path.is_file() else lms.Roster(source=str(path))
    book = root / "gradebook.db"
    if not book.is_file():
        return roster
    from nbgrader.api import Gradebook

    added = 0
    with Gradebook(f"sqlite:///{book.resolve()}", COURSE_ID) as gb:
        for s in gb.students:
            if s.id in roster.students or not (
                s.first_name or s.last_name or s.email or s.lms_user_id
            ):
                continue
            name = " ".join(n for n in (s.first_name, s.last_name) if n)
            roster.add(lms.Student(s.id, name, s.email or "", canvas_id=str(s.lms_user_id or "")))
            added += 1
    if added:
        where = f"{path} and " if path.is_file() else ""
        roster.source = f"{where}the students of {book}"
    return roster


def _assignment(item: Item, named: str, meta: str, meta_why: str, folder: str, known) -> str:
    """The assignment of an LMS download: its file's name, its nbgrader metadata (which
    wins when they disagree), or the folder it was downloaded into; "" when none says."""
    if named and meta and meta != named:
        item.how, item.action = "metadata", "mapped"
        item.notes.append(f"named {named}, but its nbgrader cells are those of {meta}")
        return meta
    if named:
        item.action = "collected"
        return named
    if meta:
        item.how, item.action = "metadata", "mapped"
        item.notes.append(f"its nbgrader cells are those of {meta}")
        return meta
    if folder in known:
        item.action = "collected"
        item.notes.append(f"{meta_why}; the assignment is the folder it was downloaded into")
        return folder
    item.action = "skipped"
    item.why = f"neither its name nor its content names an assignment ({meta_why})"
    return ""


def plan(
    root: Path,
    config: CourseConfig,
    assignments: list[str],
    roster: lms.Roster | None = None,
) -> list[tuple[Item, bytes]]:
    """Decide, for every download of `assignments`, who and what it is (nothing is written).
    `roster` (default: load_roster(root)): a name it does not hold is reported, not graded."""
    root = Path(root)
    known = assignment_ids(root)
    roster = load_roster(root) if roster is None else roster
    pattern = re.compile(config.pattern)
    items: list[tuple[Item, bytes]] = []
    for folder in assignments:
        archive = root / "downloaded" / folder / "archive"
        if not archive.is_dir():
            continue
        for shown, name, data, problem, when, container in _downloads(archive):
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
            download = lms.parse(Path(container).name if container else name)
            if download:
                _plan_lms(item, download, name if container else download.file, nb, known, folder)
            else:
                _plan_named(item, name, container, nb, known, pattern)
            _resolve(item, download, roster)
            if item.assignment and item.assignment != folder and item.action != "skipped":
                item.notes.append(f"found in downloaded/{folder}/, it is {item.assignment}")
            if item.late_mark:
                item.notes.append("marked LATE by the platform")
            if item.resubmission:
                item.notes.append(f"resubmission {item.resubmission}")
            items.append((item, data))
    _supersede(items)
    return items


def _plan_lms(item: Item, download: lms.Download, own: str, nb, known, folder: str) -> None:
    """A download a learning platform named: the student from the platform's part of the
    name, the assignment from the student's own file name or the notebook's metadata."""
    item.platform, item.lms_id = download.platform, download.user_id
    item.how = download.platform
    cleaned, late, number = _clean(own)
    item.late_mark = download.late or late
    item.resubmission = max(download.resubmission, number)
    if download.when is not None:  # Blackboard's attempt time: when it was handed in
        item.timestamp = download.when.isoformat()
    stem = cleaned.rsplit(".", 1)[0]
    named = stem if stem in known else ""
    meta, meta_why = by_metadata(nb, known)
    item.student = download.who
    item.assignment = _assignment(item, named, meta, meta_why, folder, known)


def _plan_named(item: Item, name: str, container, nb, known, pattern) -> None:
    """A download named by course.toml's [collect] pattern (or a .zip / folder per student)."""
    cleaned, item.late_mark, item.resubmission = _clean(name)
    zip_student = ""
    if container:
        zip_student, late, number = _clean(Path(container).name)
        if Path(container).is_file():
            zip_student = zip_student.rsplit(".", 1)[0]
        item.late_mark |= late
        item.resubmission = max(item.resubmission, number)
    meta_assignment, meta_why = by_metadata(nb, known)
    match = pattern.search(cleaned)
    file_id = match.group("file_id").removesuffix(".ipynb") if match else ""
    stem = cleaned.rsplit(".", 1)[0]
    if container and file_id not in known:
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


def _resolve(item: Item, download: lms.Download | None, roster: lms.Roster) -> None:
    """The student id: the roster's (an unknown name is reported, not graded), or without a
    roster the name as the platform or the pattern gave it, made safe for a folder."""
    if item.action == "skipped" or not item.student:
        if item.action != "skipped":
            item.action, item.why = "skipped", "the student id is empty"
        return
    given = item.student
    if roster:
        student, why = roster.resolve(download, given)
        if not student:
            shown = download.shown() if download else repr(given)
            item.unknown, item.student = shown, ""
            item.action = "skipped"
            item.why = (
                f"{why}: add them to {roster.source} (or correct the name) and run "
                "make collect again"
            )
            return
        if student != given:
            item.notes.append(f"{download.shown() if download else given} is {student} (roster)")
        item.student = student
        return
    safe = lms.safe_id(given)
    if safe != given:
        item.notes.append(f"student id {given!r} written as {safe!r}")
    item.student = safe
    if not safe:
        item.action, item.why = "skipped", "the student id is empty"


def _supersede(items: list[tuple[Item, bytes]]) -> None:
    """One submission per student and assignment: the highest resubmission number, then the
    latest timestamp; every other one is superseded by it."""
    best: dict[tuple[str, str], Item] = {}
    for item, _ in items:
        if item.action not in ("collected", "mapped"):
            continue
        key = (item.student, item.assignment)
        other = best.get(key)
        if other is None or (item.resubmission, item.timestamp) > (
            other.resubmission,
            other.timestamp,
        ):
            best[key] = item
    for item, _ in items:
        winner = best.get((item.student, item.assignment))
        if item.action in ("collected", "mapped") and winner is not None and winner is not item:
            item.action, item.why = "superseded", f"a later one was collected: {winner.source}"


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
    unknown = [i for i in items if i.unknown]
    if unknown:
        lines.append(
            f"{len(unknown)} downloads from students the roster does not hold (not collected; "
            "add them to the roster, or correct the names, and collect again):"
        )
        lines += [f"  {i.unknown}: {i.source}" for i in unknown]
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
