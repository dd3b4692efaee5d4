"""Hidden seeds: one per student, derived from a secret only the instructor holds.

student_seed(secret, student) = the first 8 bytes of HMAC-SHA256(secret, student id), so a
student who learns their own seed learns nothing of another's, two students never share
inputs, and a regrade reproduces the same inputs. The seed is recorded for the instructor
(grades.csv, the gradebook) and never shown to the student.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

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


def student_seed(secret: str, student: str) -> int:
    if not isinstance(secret, str) or not secret:
        raise ValueError("the hidden-seed secret is empty")
    if not isinstance(student, str) or not student:
        raise ValueError(f"expected a student id, got {student!r}")
    digest = hmac.new(secret.encode(), student.encode("utf-8", "replace"), hashlib.sha256)
    return int.from_bytes(digest.digest()[:8], "big") >> 1  # a non-negative int64
