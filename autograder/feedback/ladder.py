"""The hint ladder's state: which level of hint each failing check shows a student.

Every misconception has three hint levels (core.HINT_LEVELS: the idea, the operation or API,
nearly the code). A check that fails shows level 1; each later failing attempt of the same
check with the same misconception shows one level more (2, then 3, then 3 again). An attempt
is a grading of changed code: grading a module whose file is unchanged shows the same level
again (grading the whole kit while working on one module climbs no other module's ladder).
A check that passes, or fails with another misconception, starts again at level 1. A check
that waits on an own dependency (waiting.py: the student copy, while that file fails its own
checks) is no attempt: its level stays as it was, and `make hint` passes it by.
`make hint EX=m` climbs one level by hand.

The state lives in build/hint-state.json, one entry per submission folder and failing check:
{"misconception", "level", "source" (a hash of the module's file), "details", "message",
"name"}. A missing, unreadable or corrupt file is an empty state, never an error.

Where there is no per-student state (batch, Gradescope, PrairieLearn: each run starts fresh),
the feedback shows levels 1 and 2 (FRESH_LEVELS): the idea and the operation, not the code;
nbgrader's notebook feedback shows level 1 (NOTEBOOK_LEVELS).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.check import HINT_LEVELS, Result, Status
from ..core.paths import BUILD

STATE = BUILD / "hint-state.json"  # another path: Settings.hint_state (the kit's tests use one)
TOP = len(HINT_LEVELS)
ALL_LEVELS = tuple(range(1, TOP + 1))
FRESH_LEVELS = (1, 2)  # batch, Gradescope, PrairieLearn
NOTEBOOK_LEVELS = (1,)  # nbgrader feedback, in the notebook and in the hidden tier's verdict
VERSION = 1


def state_path(path: Path | None = None) -> Path:
    """The state's file: `path` (Settings.hint_state), else build/hint-state.json."""
    return Path(path or STATE)


def load(path: Path | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """{submission folder: {check id: entry}}; {} for a missing or corrupt file."""
    path = state_path(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    folders = data.get("submissions")
    if not isinstance(folders, dict):
        return {}
    state: dict[str, dict[str, dict[str, Any]]] = {}
    for folder, checks in folders.items():
        if isinstance(folder, str) and isinstance(checks, dict):
            state[folder] = {k: v for k, v in checks.items() if _valid(v)}
    return state


def _valid(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("misconception"), str)
        and type(entry.get("level")) is int
        and 1 <= entry["level"] <= TOP
        and isinstance(entry.get("details", {}), dict)
    )


def save(state: dict[str, dict[str, dict[str, Any]]], path: Path | None = None) -> None:
    """Write the state atomically; a grading never fails for want of a writable build/.
    Folders that no longer exist are forgotten."""
    path = state_path(path)
    state = {k: v for k, v in state.items() if v and Path(k).is_dir()}
    data = json.dumps({"version": VERSION, "submissions": state}, ensure_ascii=False, indent=1)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(data + "\n", encoding="utf-8")
        tmp.replace(path)


def source_hash(folder: Path, module: str) -> str:
    """What identifies one attempt: the module file's contents ('' when unreadable)."""
    try:
        return hashlib.sha256((Path(folder) / f"{module}.py").read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def key(folder: Path) -> str:
    return str(Path(folder).resolve())


def advance(results: Iterable[Result], folder: Path, path: Path | None = None) -> dict[str, int]:
    """Record one grading of `folder`; {check id: the level to show} for each failing check.

    The level climbs by one when the check fails with the same misconception as last time
    on a changed file; it stays when the file is unchanged; it is 1 for a new failure."""
    state = load(path)
    mine = state.setdefault(key(folder), {})
    hashes: dict[str, str] = {}
    levels: dict[str, int] = {}
    for r in results:
        if r.status == Status.WAITING:  # not judged: no attempt, the level stays
            if r.check_id in mine:
                mine[r.check_id]["waiting"] = True
            continue
        if r.passed or not r.misconception:
            mine.pop(r.check_id, None)
            continue
        source = hashes.setdefault(r.module, source_hash(folder, r.module))
        before = mine.get(r.check_id)
        level = 1
        if before and before["misconception"] == r.misconception:
            changed = before.get("source") != source or not source
            level = min(before["level"] + 1, TOP) if changed else before["level"]
        mine[r.check_id] = entry(r, level, source)
        levels[r.check_id] = level
    save(state, path)
    return levels


def entry(r: Result, level: int, source: str) -> dict[str, Any]:
    return {
        "misconception": r.misconception,
        "level": level,
        "source": source,
        "name": r.name,
        "status": str(r.status),
        "message": r.message,
        "hint": r.hint,
        "details": r.details,
    }


def levels_of(results: Iterable[Result], folder: Path, path: Path | None = None) -> dict[str, int]:
    """The levels recorded for `results`, without recording anything (the report of a
    grading already recorded)."""
    mine = load(path).get(key(folder), {})
    return {
        r.check_id: mine[r.check_id]["level"]
        for r in results
        if r.check_id in mine and mine[r.check_id]["misconception"] == r.misconception
    }


def first_failing(
    folder: Path, checks: list[str], path: Path | None = None
) -> tuple[str, dict] | None:
    """The first of `checks` (ids, in course order) with a recorded failure (not one that
    waits on another file now)."""
    mine = load(path).get(key(folder), {})
    return next(((c, mine[c]) for c in checks if c in mine and not mine[c].get("waiting")), None)


def climb(folder: Path, check_id: str, path: Path | None = None) -> int:
    """One level more for `check_id` (make hint); returns the level now shown."""
    state = load(path)
    mine = state.get(key(folder), {})
    if check_id not in mine:
        return 0
    mine[check_id]["level"] = min(mine[check_id]["level"] + 1, TOP)
    save(state, path)
    return int(mine[check_id]["level"])


def as_result(check_id: str, module: str, recorded: dict[str, Any]) -> Result:
    """A recorded failure as a Result (what i18n needs to word its message and hints)."""
    details = recorded.get("details")
    return Result(
        check_id=check_id,
        name=str(recorded.get("name", check_id)),
        module=module,
        points=0.0,
        score=0.0,
        status=recorded.get("status", "failed"),
        misconception=recorded["misconception"],
        message=str(recorded.get("message", "")),
        hint=str(recorded.get("hint", "")),
        details=details if isinstance(details, dict) else {},
    )
