"""`make export`: course/grades.csv from nbgrader's gradebook, "missing" told from 0, and
course/canvas.csv, Canvas's gradebook import with the ids the roster holds.

grades.csv has one row per student and assignment:

    student_id, assignment, status, timestamp, duedate, raw_score, late_penalty, score,
    max_score, stale

status is "graded", "late" (graded, submitted after the due date) or "missing" (nothing was
submitted: the score cells are empty, not 0). Timestamps are the downloads' own (UTC). A row
says what was recorded when it was graded (records.py): its status and penalty under the
course.toml of that day, and `stale` names what course.toml changed since (the late policy,
the due date, the points), for `make regrade ALL=1` to apply.

canvas.csv: Student, ID (Canvas's user id), SIS User ID, SIS Login ID (the roster's, or the
student id), Section, then one column per assignment (the score after the late penalty;
empty when nothing was submitted) under a "Points Possible" row. The ids come from the
roster (course/roster.csv, nbgrader's database) and, for a student it lacks, from the Canvas
user id in their downloads' names (collect-report.json).
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ...core import course_config
from ...feedback.sinks import cell
from . import collect, records
from .records import COURSE_ID

COLUMNS = [
    "student_id",
    "assignment",
    "status",
    "timestamp",
    "duedate",
    "raw_score",
    "late_penalty",
    "score",
    "max_score",
    "stale",
]
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def _num(x) -> str:
    return f"{x:g}" if x is not None else ""


def rows(root: Path) -> list[dict]:
    root = Path(root).resolve()
    config = course_config.load(root)
    out = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        assignments = sorted(gb.assignments, key=lambda a: a.name)
        for student in sorted(gb.students, key=lambda s: s.id):
            for a in assignments:
                row = dict.fromkeys(COLUMNS, "")
                row.update(student_id=student.id, assignment=a.name, max_score=_num(a.max_score))
                due = config.due.get(a.name)
                row["duedate"] = due.astimezone(dt.UTC).isoformat() if due else ""
                try:
                    sub = gb.find_submission(a.name, student.id)
                except MissingEntry:
                    row["status"] = "missing"
                    out.append(row)
                    continue
                penalty = sum(nb.late_submission_penalty or 0.0 for nb in sub.notebooks)
                raw = sub.score
                when = sub.timestamp.replace(tzinfo=dt.UTC) if sub.timestamp else None
                record = records.read(root, student.id, a.name)
                # late as it was when graded (its penalty is that day's), else as it is now
                late = (record or {}).get("late_seconds", config.seconds_late(a.name, when))
                row.update(
                    status="late" if late > 0 else "graded",
                    timestamp=sub.timestamp.isoformat() + "Z" if sub.timestamp else "",
                    raw_score=_num(raw),
                    late_penalty=_num(penalty),
                    score=_num(max(0.0, raw - penalty)),
                    stale="; ".join(records.stale(record, config, a.name)),
                )
                out.append(row)
    return out


def write_grades(root: Path, out: Path, table: list[dict] | None = None) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows(root) if table is None else table)
    return out


def stale_summary(table: list[dict]) -> str:
    """What make export says about grades computed under another course.toml ("" if none)."""
    stale = [r for r in table if r["stale"]]
    if not stale:
        return ""
    lines = [
        f"{len(stale)} of {sum(r['status'] != 'missing' for r in table)} grades are stale: "
        f"computed under another {course_config.FILE} (grades.csv's stale column); "
        "`make regrade ALL=1` applies the current one to everyone"
    ]
    lines += [f"  {r['student_id']} / {r['assignment']}: {r['stale']}" for r in stale[:20]]
    if len(stale) > 20:
        lines.append(f"  ... and {len(stale) - 20} more")
    return "\n".join(lines)


def canvas_ids(root: Path) -> dict[str, dict[str, str]]:
    """{student: Canvas's columns} from the roster, then the Canvas user ids collect read
    off the downloads' names for students the roster lacks."""
    roster = collect.load_roster(root)
    ids = {
        s.id: {
            "Student": s.name or s.id,
            "ID": s.canvas_id,
            "SIS User ID": s.sis_user_id,
            "SIS Login ID": s.sis_login_id or s.id,
            "Section": s.section,
        }
        for s in roster.students.values()
    }
    for item in collect.read_report(root):
        if item.platform == "canvas" and item.lms_id and item.student:
            found = ids.setdefault(item.student, {})
            found.setdefault("ID", item.lms_id)
            found["ID"] = found["ID"] or item.lms_id
    return ids


def write_canvas(root: Path, out: Path, table: list[dict], title: str = "Attention Lab") -> Path:
    """Canvas's gradebook import (module docstring): every student of the gradebook and of
    the roster, the ids the roster holds, one column per assignment."""
    ids = canvas_ids(root)
    assignments = list(dict.fromkeys(r["assignment"] for r in table))
    maxima = {r["assignment"]: r["max_score"] for r in table}
    scores = {(r["student_id"], r["assignment"]): r["score"] for r in table}
    students = sorted({r["student_id"] for r in table} | set(ids))
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CANVAS_FIXED + [f"{title}: {a}" for a in assignments])
        writer.writerow(["Points Possible", "", "", "", ""] + [maxima[a] for a in assignments])
        for student in students:
            known = ids.get(student, {})
            fixed = [known.get(c) or "" for c in CANVAS_FIXED]
            fixed[0] = fixed[0] or student
            fixed[3] = fixed[3] or student  # Canvas matches on SIS Login ID when ID is empty
            fixed = [cell(c) for c in fixed]  # names from downloads: never a formula
            writer.writerow(fixed + [scores.get((student, a), "") for a in assignments])
    return Path(out)
