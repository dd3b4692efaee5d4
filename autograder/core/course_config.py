"""The course configuration file, course/course.toml: one place for what an instructor decides.

`make course` writes it once (never overwrites it); the instructor edits it. It holds:

    [collect] pattern      how downloaded notebooks are named (a regular expression with the
                           groups student_id and file_id, matched against the file name once a
                           Canvas-style "LATE_" mark and a "-1" resubmission suffix are gone)
    [late]                 policy = "none" | "zero" | "penalty"; per_day (share of the score
                           lost per started day late, policy "penalty"); grace_minutes
    [due]                  a due date per assignment: "2026-10-01 23:59" (UTC unless it says
                           otherwise, e.g. "2026-10-01 23:59 +02:00"); empty = no due date
    [points]               per-check point overrides: "attention.reference" = 4
    [hidden] secret        the instructor's secret: each student's hidden-tier seed is derived
                           from it and the student id (never released, never shown to students)
    [limits]               optional: timeout, memory_mb for the sandboxed verbs (batch,
                           autograde, the platforms), check_timeout for every channel alike
                           (limits.TimeLimits.of); the environment and the flags override
                           them (settings.py resolves and validates them)

Everything read here is validated, with errors that say what was expected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import registry

FILE = "course.toml"
POLICIES = ("none", "zero", "penalty")
DEFAULT_PATTERN = r"^(?P<student_id>[^/]+)_(?P<file_id>[^_/]+)\.ipynb$"

TEMPLATE = """\
# Attention Lab course settings, written once by `make course`: yours to edit (it is never
# overwritten). Documented in docs/course.md. Keep this file out of what you hand to students.
# Grades already given keep the settings they were computed under: `make export` names them
# stale after a change, and `make regrade ALL=1` applies the new settings to everyone.

[collect]
# How downloaded notebooks are named, as a regular expression with the groups student_id and
# file_id (the notebook's name without .ipynb). It is matched against the file name after a
# Canvas-style "LATE_" mark and a "-1" / " (1)" resubmission suffix are taken off. A file that
# does not fit is mapped by the nbgrader metadata inside it when that is unambiguous, and
# otherwise listed in course/collect-report.txt and skipped.
pattern = '{pattern}'

[late]
# policy: "none" (no penalty), "zero" (a late submission scores 0) or "penalty" (per_day of
# the score is lost per started day late, at most all of it). grace_minutes: lateness below
# it does not count. Lateness = the download's timestamp minus the due date below.
policy = "none"
per_day = 0.10
grace_minutes = 0

[due]
# One due date per assignment, "YYYY-MM-DD HH:MM" in UTC (or with an offset, "+02:00").
# An empty string means no due date (nothing is late).
{due}

[points]
# Per-check point overrides, by check id (`.venv/bin/python -m autograder checks`, run in the
# kit, lists every id with its points), e.g.
# "attention.reference" = 4
# The notebooks' test cells and the autograde scores both follow them; run `make course` and
# `make release` again after a change.

[hidden]
# The hidden tier's secret: each student's seed is derived from it and the student id.
# Never release it; changing it changes every later grade.
secret = "{secret}"
"""


class ConfigError(ValueError):
    """course.toml holds something unexpected: the message says what and where."""


@dataclass
class CourseConfig:
    path: Path
    pattern: str = DEFAULT_PATTERN
    policy: str = "none"
    per_day: float = 0.1
    grace_minutes: float = 0.0
    due: dict[str, dt.datetime | None] = field(default_factory=dict)
    points: dict[str, float] = field(default_factory=dict)
    secret: str = ""

    # ------------------------------------------------------------------ seeds

    def seed(self, student: str, assignment: str = "") -> int:
        """The hidden-tier seed of one student (and assignment), derived from the secret."""
        if not self.secret:
            raise ConfigError(f"{self.path}: [hidden] secret is empty; put a long random string")
        message = f"{student}\0{assignment}".encode()
        digest = hmac.new(self.secret.encode(), message, hashlib.sha256).digest()
        return int.from_bytes(digest[:4], "big") % (2**31 - 2) + 1

    # ------------------------------------------------------------------ points

    def points_of(self, check) -> float:
        return self.points.get(check.id, check.points)

    # ------------------------------------------------------------------ lateness

    def seconds_late(self, assignment: str, submitted: dt.datetime | None) -> float:
        due = self.due.get(assignment)
        if due is None or submitted is None:
            return 0.0
        late = (submitted - due).total_seconds()
        return late if late > self.grace_minutes * 60 else 0.0

    def penalty(self, assignment: str, score: float, submitted: dt.datetime | None) -> float:
        """Points taken off `score` for lateness, under the late policy."""
        late = self.seconds_late(assignment, submitted)
        if late <= 0 or self.policy == "none":
            return 0.0
        if self.policy == "zero":
            return score
        days = -(-late // 86400)  # every started day counts
        return round(min(score, score * self.per_day * days), 6)


def file_hash(path: Path) -> str:
    """The hash recorded with grades, so that a later change of course.toml shows ("" when
    there is none)."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""


def parse_time(text: str, where: str) -> dt.datetime:
    """'2026-10-01 23:59' (UTC) or with an offset / 'Z' / 'UTC' -> an aware datetime."""
    value = text.strip().replace("T", " ")
    value = re.sub(r"\s*(UTC|GMT|Z)$", "+00:00", value)
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"{where}: {text!r} is not a date; expected 'YYYY-MM-DD HH:MM' (UTC) or "
            "'YYYY-MM-DD HH:MM +02:00'"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def write(root: Path, assignments: list[str]) -> Path:
    """Write root/course.toml when it is missing (a fresh secret); return its path."""
    path = Path(root) / FILE
    if not path.is_file():
        due = "\n".join(f'{a} = ""' for a in assignments)
        text = TEMPLATE.format(pattern=DEFAULT_PATTERN, due=due, secret=secrets.token_urlsafe(32))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o600)
    return path


def load(root: Path) -> CourseConfig:
    """Read and validate root/course.toml (defaults when it is missing, with no secret)."""
    path = Path(root) / FILE
    config = CourseConfig(path)
    if not path.is_file():
        return config
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
    known = {"collect", "late", "due", "points", "hidden", "limits"}  # [limits]: settings.py
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown section [{unknown[0]}]; expected {sorted(known)}")

    pattern = data.get("collect", {}).get("pattern", DEFAULT_PATTERN)
    try:
        groups = re.compile(pattern).groupindex
    except (re.error, TypeError) as e:
        raise ConfigError(f"{path}: [collect] pattern is not a regular expression: {e}") from None
    if not {"student_id", "file_id"} <= set(groups):
        raise ConfigError(
            f"{path}: [collect] pattern must have the groups (?P<student_id>...) and "
            f"(?P<file_id>...); it has {sorted(groups) or 'none'}"
        )
    config.pattern = pattern

    late = data.get("late", {})
    config.policy = late.get("policy", "none")
    if config.policy not in POLICIES:
        raise ConfigError(
            f"{path}: [late] policy = {config.policy!r}; expected one of {', '.join(POLICIES)}"
        )
    for name in ("per_day", "grace_minutes"):
        value = late.get(name, getattr(config, name))
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{path}: [late] {name} = {value!r}; expected a number >= 0")
        setattr(config, name, float(value))
    if config.per_day > 1:
        raise ConfigError(
            f"{path}: [late] per_day = {config.per_day}; expected a share of the score, 0 to 1"
        )

    for assignment, text in data.get("due", {}).items():
        if not isinstance(text, str):
            raise ConfigError(f"{path}: [due] {assignment} = {text!r}; expected a string date")
        config.due[assignment] = parse_time(text, f"{path}: [due] {assignment}") if text else None

    points = data.get("points", {})
    # Only then: the check ids import every check (and torch), which a batch's start avoids.
    ids = {c.id for m in registry.modules() for c in registry.checks_of(m)} if points else set()
    for check_id, value in points.items():
        if check_id not in ids:
            raise ConfigError(
                f"{path}: [points] {check_id!r} is not a check id (e.g. 'attention.reference')"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{path}: [points] {check_id} = {value!r}; expected points >= 0")
        config.points[check_id] = float(value)

    secret = data.get("hidden", {}).get("secret", "")
    if not isinstance(secret, str):
        raise ConfigError(f"{path}: [hidden] secret must be a string")
    config.secret = secret
    return config
