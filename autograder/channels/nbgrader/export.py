"""`make export`: course/grades.csv from nbgrader's gradebook, "missing" told from 0.

One row per student and assignment:

    student_id, assignment, status, timestamp, duedate, raw_score, late_penalty, score, max_score

status is "graded", "late" (graded, submitted after the due date) or "missing" (nothing was
submitted: the score cells are empty, not 0). Timestamps are the downloads' own (UTC).
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ...core import course_config
from .autograde import COURSE_ID

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
]


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
                row.update(
                    status="late" if config.seconds_late(a.name, when) > 0 else "graded",
                    timestamp=sub.timestamp.isoformat() + "Z" if sub.timestamp else "",
                    raw_score=_num(raw),
                    late_penalty=_num(penalty),
                    score=_num(max(0.0, raw - penalty)),
                )
                out.append(row)
    return out


def write_grades(root: Path, out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows(root))
    return out
