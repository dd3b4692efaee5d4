"""Hidden seeds: one per student, derived from a secret only the instructor holds.

student_seed(secret, student) = the first 8 bytes of HMAC-SHA256(secret, student id), so a
student who learns their own seed learns nothing of another's, two students never share
inputs, and a regrade reproduces the same inputs. The seed is recorded for the instructor
(grades.csv, the gradebook) and never shown to the student.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from . import course_config, paths, registry

SECRET_BYTES = 32


def new_secret() -> str:
    return secrets.token_hex(SECRET_BYTES)


def read_secret(path: Path) -> str:
    """The instructor's secret from `path` (hex), with an error that says what is wrong."""
    try:
        text = Path(path).read_text().strip()
    except OSError as e:
        raise ValueError(f"cannot read the hidden-seed secret from {path}: {e}") from None
    if len(text) < 32 or any(c not in "0123456789abcdef" for c in text.lower()):
        raise ValueError(
            f"{path} should hold the hidden-seed secret as at least 32 hex digits "
            f"(make one with `python -c 'import secrets; print(secrets.token_hex(32))'`)"
        )
    return text


def student_seed(secret: str, student: str, attempt: str = "") -> int:
    """The hidden seed of `student`'s `attempt` (an attempt id: attempt_id, or the platform's
    submission id): HMAC-SHA256(secret, student id, attempt id). Each attempt draws its own
    inputs, so what one attempt's feedback showed says nothing of the next one's inputs; the
    attempt id is recorded with the grade, so a regrade reproduces the seed. No attempt id:
    one seed per student (nbgrader's, where the instructor releases feedback)."""
    if not isinstance(secret, str) or not secret:
        raise ValueError("the hidden-seed secret is empty")
    if not isinstance(student, str) or not student:
        raise ValueError(f"expected a student id, got {student!r}")
    message = student if not attempt else f"{student}\0{attempt}"
    digest = hmac.new(secret.encode(), message.encode("utf-8", "replace"), hashlib.sha256)
    return int.from_bytes(digest.digest()[:8], "big") >> 1  # a non-negative int64


def attempt_id(folder: Path) -> str:
    """An attempt's id where the platform gives none (make batch, PrairieLearn): a digest of
    the files handed in, names and bytes (links not followed). Handing in the same files again
    draws the same inputs, and gains nothing (the same code, the same feedback); any change to
    the code draws new ones. A regrade of the same files reproduces the grade.

    It digests exactly what grading takes (run/sandbox/runner.copy_submission): the same walk,
    hidden folders and links left out, every byte of each file up to the same caps. Reading
    only the first 64 MB of a walk that also entered hidden folders let a 64 MB file in `.a/`
    pin the seed while the graded code changed (a hunt: the same inputs twice, other code)."""
    digest = hashlib.sha256()
    root = Path(folder)
    for path in handed_in(root):
        digest.update(path.relative_to(root).as_posix().encode("utf-8", "replace") + b"\0")
        digest.update(str(path.stat().st_size).encode() + b"\0")
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]


# What grading takes of a submission folder: at most this many files and bytes (the rest is
# left out, and said so).
MAX_FILES, MAX_BYTES = 2000, 50 << 20


def handed_in(root: Path, notes: list[str] | None = None) -> Iterator[Path]:
    """The regular files of a submission folder that grading takes, in the order it takes
    them: folders sorted, hidden ones (.name) and __pycache__ left out, links and special
    files left out, until MAX_FILES files or MAX_BYTES bytes (a file's size as it is read
    from the folder). What is left out is said in `notes`, when given."""
    notes = [] if notes is None else notes
    count = total = 0
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in sorted(d for d in dirs if (Path(dirpath) / d).is_symlink()):
            notes.append(f"{rel / name} is a link to a folder: left out")
        dirs[:] = sorted(
            d
            for d in dirs
            if d != "__pycache__" and not d.startswith(".") and not (Path(dirpath) / d).is_symlink()
        )
        for name in sorted(files):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                notes.append(f"{rel / name} is a link or a special file: left out")
                continue
            count += 1
            total += path.stat().st_size
            if count > MAX_FILES or total > MAX_BYTES:
                notes.append(f"the submission is larger than {MAX_BYTES >> 20} MB: rest left out")
                return
            yield path


# --------------------------------------------------------------------------- the secret
#
# One place: course/course.toml, [hidden] secret (what nbgrader's `make autograde` reads too).
# `make batch` makes course.toml, with a fresh secret, when it is missing, and says so;
# `make gradescope` copies the secret into autograder.zip as SECRET_MEMBER, which
# run_autograder makes readable by root only.
SECRET_MEMBER = "seed_secret.txt"


class SecretMissing(ValueError):
    """course.toml has no usable secret: the message says where to put one."""


def course_secret(course_dir: Path | None = None, *, create: bool = True) -> tuple[str, bool]:
    """(the instructor's secret, whether it was made just now) from course/course.toml."""
    folder = Path(course_dir) if course_dir else paths.ROOT / "course"
    made = False
    if create and not (folder / course_config.FILE).is_file():
        course_config.write(folder, registry.modules())
        made = True
    config = course_config.load(folder)
    secret = config.secret if isinstance(config.secret, str) else ""
    if len(secret.strip()) < 16:
        raise SecretMissing(
            f"{folder / course_config.FILE}: [hidden] secret is missing or shorter than 16 "
            "characters; put a long random string there (python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'): each student's hidden seed is derived from it"
        )
    return secret.strip(), made


def read_member_secret(path: Path) -> str:
    """The secret autograder.zip carries (SECRET_MEMBER), or '' if it has none."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""
