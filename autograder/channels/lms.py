"""Learning platforms' download names and the course roster: who handed in a downloaded file.

Canvas, Moodle and Blackboard name the files they hand an instructor after the student, not
after the assignment (docs/course.md, "Downloads from a learning platform"):

    Canvas      smithjohn_123456_7891011_masks.ipynb      <name>_<user id>_<file id>_<file>
                judy_LATE_123456_7891011_masks-1.ipynb    LATE_ after the name when late; a
                                                          re-upload gets -1, -2 on the file
    Moodle      John Smith_4321_assignsubmission_file_masks.ipynb     (a file), or a folder
                John Smith_4321_assignsubmission_file_/masks.ipynb    (one per student)
    Blackboard  Masks_jsmith_attempt_2026-10-01-23-59-07_masks.ipynb
                <assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>

`parse` reads those names. A `Roster` (course/roster.csv, or the students nbgrader's database
holds with a name, an e-mail or an LMS id) says which student of the course a download is:
Canvas's user id and Moodle's id resolve to the roster's student id, the names to the student
whose name, id, username or alias they are. Without a roster the platform's name is the id
("smithjohn", "John_Smith", "jsmith").
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

ROSTER = "roster.csv"
# roster.csv's columns; a header may also use the names on the right (any case, spaces or _)
COLUMNS = {
    "id": ("student_id",),
    "name": ("full_name",),
    "email": ("e_mail",),
    "canvas_id": ("canvas_user_id", "lms_user_id"),
    "sis_user_id": (),
    "sis_login_id": (),
    "section": (),
    "moodle_id": (),
    "username": ("login", "blackboard_username"),
    "aliases": (),
}

_CANVAS = re.compile(
    r"^(?P<who>[^_].*?)_(?P<late>LATE_)?(?P<user>\d+)_(?P<file_id>\d+)_(?P<file>.+)$",
    re.IGNORECASE,
)
_MOODLE = re.compile(
    r"^(?P<who>.+?)_(?P<user>\d+)_assignsubmission_(?:file|onlinetext)(?:_(?P<file>.*))?$"
)
_BLACKBOARD = re.compile(
    r"^(?P<assignment>.+)_(?P<who>[^_]+)_attempt_"
    r"(?P<when>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+)|\.txt)?$"
)
_RESUBMIT = re.compile(r"-(\d+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


@dataclass(frozen=True)
class Download:
    """What a learning platform's name says about a download."""

    platform: str  # "canvas" | "moodle" | "blackboard"
    who: str  # the student as the platform names them: "smithjohn", "John Smith", "jsmith"
    user_id: str = ""  # Canvas's user id, Moodle's participant id
    file: str = ""  # the student's own file name ("" for a Moodle folder)
    late: bool = False  # Canvas's LATE mark
    resubmission: int = 0  # Canvas's "-1", "-2" on a re-uploaded file
    when: dt.datetime | None = None  # Blackboard's attempt time (read as UTC)

    def shown(self) -> str:
        """'judy (Canvas user 123456)'."""
        ids = {"canvas": "Canvas user", "moodle": "Moodle id"}.get(self.platform)
        return f"{self.who} ({ids} {self.user_id})" if ids and self.user_id else self.who


def parse(name: str) -> Download | None:
    """The Canvas, Moodle or Blackboard form of a download's name (a file or a folder), or
    None when it has none of them."""
    match = _MOODLE.match(name)
    if match:
        return Download("moodle", match["who"].strip(), match["user"], match["file"] or "")
    match = _BLACKBOARD.match(name)
    if match:
        when = dt.datetime.strptime(match["when"], "%Y-%m-%d-%H-%M-%S").replace(tzinfo=dt.UTC)
        return Download("blackboard", match["who"], file=match["file"] or "", when=when)
    match = _CANVAS.match(name)
    if match:
        file = match["file"]
        stem, dot, ext = file.rpartition(".")
        number = 0
        again = _RESUBMIT.search(stem if dot else file)
        if again:
            number = int(again.group(1))
            file = (stem[: again.start()] + dot + ext) if dot else file[: again.start()]
        return Download("canvas", match["who"], match["user"], file, bool(match["late"]), number)
    return None


def safe_id(text: str) -> str:
    """A student id usable as a folder name: 'John Smith' -> 'John_Smith'."""
    return _UNSAFE.sub("_", text.strip()).strip("._")


def name_keys(name: str) -> set[str]:
    """The ways platforms write a name, reduced to lower-case letters and digits:
    'John Smith' -> {'johnsmith', 'smithjohn'}; 'Smith, John' -> {'smithjohn', 'johnsmith'}."""

    def key(text: str) -> str:
        return re.sub(r"[\W_]+", "", text.casefold())

    if "," in name:
        last, _, first = name.partition(",")
        parts = [first, last]
    else:
        parts = name.split()
    keys = {key(name)}
    if len(parts) > 1:
        keys |= {key(" ".join(parts)), key(parts[-1] + " " + " ".join(parts[:-1]))}
    return {k for k in keys if k}


@dataclass
class Student:
    id: str
    name: str = ""
    email: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    moodle_id: str = ""
    username: str = ""
    aliases: list[str] = field(default_factory=list)

    def handles(self) -> set[str]:
        """The ids a plain file name or a Blackboard username may use, lower-cased."""
        found = {self.id, self.username, self.sis_login_id, *self.aliases}
        if self.email:
            found |= {self.email, self.email.split("@")[0]}
        return {h.casefold() for h in found if h}


class RosterError(ValueError):
    """roster.csv cannot be read: the message says where and what."""


@dataclass
class Roster:
    """The course's students: `source` says where they came from (shown in reports)."""

    students: dict[str, Student] = field(default_factory=dict)
    source: str = ""

    def __bool__(self) -> bool:
        return bool(self.students)

    def add(self, student: Student) -> None:
        self.students.setdefault(student.id, student)

    def _one(self, found: list[Student], what: str) -> tuple[str, str]:
        ids = sorted({s.id for s in found})
        if len(ids) == 1:
            return ids[0], ""
        if ids:
            return "", f"{what} fits {len(ids)} students of the roster ({', '.join(ids)})"
        return "", f"{what} is not in the roster ({self.source})"

    def resolve(self, download: Download | None, plain: str = "") -> tuple[str, str]:
        """(the roster's student id, "") or ("", why not) for a download's name."""
        everyone = list(self.students.values())
        if download is None:
            key = plain.casefold()
            return self._one([s for s in everyone if key in s.handles()], repr(plain))
        if download.user_id:
            field_name = "canvas_id" if download.platform == "canvas" else "moodle_id"
            by_id = [s for s in everyone if getattr(s, field_name) == download.user_id]
            if by_id:
                return self._one(by_id, download.shown())
        who = download.who.casefold()
        if download.platform == "blackboard":
            return self._one([s for s in everyone if who in s.handles()], download.shown())
        keys = name_keys(download.who)
        found = [
            s
            for s in everyone
            if keys & name_keys(s.name) or who in s.handles() or keys & name_keys(s.id)
        ]
        return self._one(found, download.shown())


def read_csv(path: Path) -> Roster:
    """course/roster.csv: a header row, then one row per student; only `id` is required."""
    path = Path(path)
    roster = Roster(source=str(path))
    lookup = {alias: column for column, more in COLUMNS.items() for alias in (column, *more)}
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            columns = [lookup.get(re.sub(r"[\s_-]+", "_", h.strip().casefold())) for h in header]
            if "id" not in columns:
                raise RosterError(
                    f"{path}: the first row names no `id` column (the student ids of the "
                    f"course); it reads {header}. Expected columns: {', '.join(COLUMNS)}"
                )
            for number, row in enumerate(reader, start=2):
                values = {c: v.strip() for c, v in zip(columns, row, strict=False) if c}
                if not any(values.values()):
                    continue
                student_id = safe_id(values.get("id", ""))
                if not student_id:
                    raise RosterError(f"{path}, line {number}: the row has no student id")
                if student_id in roster.students:
                    raise RosterError(f"{path}, line {number}: student id {student_id!r} twice")
                aliases = re.split(r"[;|]", values.pop("aliases", ""))
                values.pop("id")
                roster.add(
                    Student(student_id, **values, aliases=[a.strip() for a in aliases if a.strip()])
                )
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise RosterError(f"{path} cannot be read: {e}") from None
    return roster
