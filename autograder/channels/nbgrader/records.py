"""What each nbgrader grade was computed under: course/records/<student>/<assignment>.json.

`make autograde` (and every regrade) writes one record per grade it puts in the gradebook:

    course_toml     hashes of course.toml as a whole ("file") and of what a grade depends on:
                    "late" (policy, per_day, grace_minutes), "due" (this assignment's due
                    date), "points" (the point of each of its checks, overrides included)
    seed            the hidden-tier seed it was graded on (from [hidden] secret)
    code            a hash of the submitted notebook and its timestamp.txt
    results         every check's result, unscaled: the grade can be computed again from them
    timestamp, late_seconds, penalty, score, max_score   what was recorded in the gradebook

`make export` compares each record with course.toml as it is now (`stale`): a grade computed
under another late policy, due date or point table is named stale in grades.csv, and
`make regrade ALL=1` applies the current course.toml to everyone: from the stored results
when the notebook and the seed are the ones graded (`must_rerun` says why not otherwise),
re-running the sandbox only for the others.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from ...core import registry
from ...core.check import Result, Status
from ...core.course_config import FILE, CourseConfig, file_hash

# The course's id in nbgrader's gradebook (nbgrader_config.py: CourseDirectory.course_id).
COURSE_ID = "attention-lab"

FOLDER = "records"


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def policy(config: CourseConfig, assignment: str) -> dict[str, str]:
    """The hashes of what one assignment's grades depend on in course.toml."""
    due = config.due.get(assignment)
    path = Path(config.path)
    points = {c.id: config.points_of(c) for c in registry.checks_of(assignment)}
    return {
        "file": file_hash(path),
        "late": _hash([config.policy, config.per_day, config.grace_minutes]),
        "due": _hash(due.astimezone(dt.UTC).isoformat() if due else ""),
        "points": _hash(points),
    }


WHAT = {
    "late": "[late] (the late policy)",
    "due": "[due] {assignment}",
    "points": "[points] (the points of its checks)",
}


def code_hash(root: Path, student: str, assignment: str) -> str:
    """The submitted notebook and its timestamp, as nbgrader autograde reads them."""
    folder = Path(root) / "submitted" / student / assignment
    digest = hashlib.sha256()
    for name in (f"{assignment}.ipynb", "timestamp.txt"):
        path = folder / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(none)")
    return digest.hexdigest()[:16]


def path_of(root: Path, student: str, assignment: str) -> Path:
    return Path(root) / FOLDER / student / f"{assignment}.json"


def write(root: Path, config: CourseConfig, judged) -> Path:
    """The record of one judged notebook (autograde.Judged, once it is in the gradebook)."""
    a = judged.assignment
    late = config.seconds_late(a, judged.timestamp)
    record = {
        "student": judged.student,
        "assignment": a,
        "graded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "course_toml": policy(config, a),
        "seed": judged.seed,
        "code": code_hash(root, judged.student, a),
        "timestamp": judged.timestamp.isoformat() if judged.timestamp else "",
        "late_seconds": late,
        "penalty": judged.penalty,
        "score": judged.score,
        "max_score": judged.max_score,
        "results": [dataclasses.asdict(r) for r in judged.results],
    }
    path = path_of(root, judged.student, a)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
    tmp.replace(path)
    return path


def read(root: Path, student: str, assignment: str) -> dict | None:
    path = path_of(root, student, assignment)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "course_toml" in record else None


def results(record: dict) -> list[Result]:
    """The stored results, as the sandbox returned them (scores on the checks' own points)."""
    names = {f.name for f in dataclasses.fields(Result)}
    out = []
    for data in record.get("results", []):
        values = {k: v for k, v in data.items() if k in names}
        values["status"] = Status(values["status"])
        out.append(Result(**values))
    return out


def stale(record: dict | None, config: CourseConfig, assignment: str) -> list[str]:
    """What changed in course.toml since this grade was computed ([] when nothing did)."""
    if record is None:
        return [f"no record of the {FILE} it was computed under"]
    then, now = record.get("course_toml", {}), policy(config, assignment)
    return [WHAT[key].format(assignment=assignment) for key in WHAT if then.get(key) != now[key]]


def must_rerun(
    record: dict | None, root: Path, config: CourseConfig, student: str, assignment: str
) -> str:
    """Why this notebook must be graded again in the sandbox ("" when its stored results
    hold: the same notebook, the same seed)."""
    if record is None or not record.get("results"):
        return "no stored results"
    if record.get("code") != code_hash(root, student, assignment):
        return "the submitted notebook changed since it was graded"
    if record.get("seed") != config.seed(student, assignment):
        return f"the hidden seed changed ({FILE}'s [hidden] secret)"
    return ""
