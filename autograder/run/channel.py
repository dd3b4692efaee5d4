"""One message loop between the trusted parent and the process that runs student code.

Both placements that run student code in a process of its own speak it: the forked worker of
`make grade` and `make watch` (worker.py) and the sandbox's confined process (sandbox/child.py,
read by sandbox/runner.py). The child side is `probe_all`: for each check a "start" message,
the probe (probing.Attempts, which adds "loaded" and "stuck"), then one outcome message:
"outputs" (plain tensors and values, sandbox/wire.py: never pickle), "result" (a failure the
child saw: import error, crash, not attempted; never a pass), or "unencodable"; "done" at the
end. The parent side is `Reading`: every message is hostile input, checked here once for both
placements; what it records is then settled by the one policy (policy.py) and judged by the
one judge (engine.verdict).

This module is on the probe side (the sandboxed process imports it): it imports no judge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.check import Check, ProbeSpec, Result
from .sandbox import wire

OUTCOMES = ("outputs", "result", "unencodable")
KINDS = frozenset({"start", "loaded", "stuck", "done", *OUTCOMES})
# The fields of each kind of outcome and the types they must have.
_FIELDS: dict[str, dict[str, type]] = {
    "outputs": {"outputs": dict},
    "result": {"status": str, "misconception": str, "message": str, "hint": str},
}

Send = Callable[..., None]  # send(message, blob=b"")


# --------------------------------------------------------------------------- child side


def result_message(check_id: str, result: Result) -> dict[str, Any]:
    return {
        "type": "result",
        "check": check_id,
        "status": str(result.status),
        "misconception": result.misconception,
        "message": result.message,
        "hint": result.hint,
        "details": result.details,
    }


def probe_all(
    checks: list[Check] | list[ProbeSpec],
    inputs: dict[str, Any],
    run: Callable[[Any, Any], Any],
    send: Send,
    *,
    after: Callable[[], None] | None = None,
) -> None:
    """The child's loop: run each check (`run(check, its inputs)`: probing.Attempts, never
    raises for what student code does) and send its outcome. `after()` runs after each probe,
    before its outcome (the worker marks the end of the check's prints)."""
    for check in checks:
        send({"type": "start", "check": check.id})
        got = run(check, inputs[check.id])
        if after is not None:
            after()
        if isinstance(got, Result):
            send(result_message(check.id, got))
            continue
        try:
            described, blob = wire.encode_outputs(got)
        except Exception as e:
            send({"type": "unencodable", "check": check.id, "why": str(e)[:300]})
            continue
        send({"type": "outputs", "check": check.id, "outputs": described}, blob)
    send({"type": "done"})


# --------------------------------------------------------------------------- parent side


def malformed(kind: str, header: dict[str, Any]) -> str:
    """What is wrong with an outcome message ('' if nothing)."""
    for key, expected in _FIELDS.get(kind, {}).items():
        value = header.get(key)
        if type(value) is not expected:
            got = type(value).__name__ if key in header else "nothing"
            return f"its {key!r} field should be a {expected.__name__}, got {got}"
    return ""


class Reading:
    """What the child said about `ids` (the checks it was given), message by message: every
    byte is hostile. A message of an unknown type, or for no check of `ids`, is stray (a note,
    nothing more); an outcome whose fields are wrong is `malformed` (it costs that check);
    only the first outcome of a check counts."""

    def __init__(self, ids: set[str] | dict[str, Any]):
        self.ids = set(ids)
        self.started: list[str] = []
        self.loaded: set[str] = set()  # checks whose module's import returned
        self.stuck: dict[str, object] = {}  # check -> the guarded function it called
        self.outcome: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.malformed: dict[str, str] = {}
        self.stray: list[str] = []
        self.done = False

    def take(self, header: dict[str, Any], blob: bytes) -> tuple[str, str] | None:
        """Record one message; (its kind, its check) when it counts, else None."""
        kind, check_id = header.get("type"), header.get("check")
        if kind == "done":
            self.done = True
            return "done", ""
        if type(kind) is not str or kind not in KINDS:
            self.stray.append("a message of an unknown type")
        elif type(check_id) is not str:
            self.stray.append(f"a {kind!r} message whose check is not a name")
        elif check_id not in self.ids:
            self.stray.append(f"a message for a check that does not exist ({check_id[:60]!r})")
        elif kind == "start":
            self.started.append(check_id)
            return kind, check_id
        elif kind == "loaded":
            self.loaded.add(check_id)
            return kind, check_id
        elif kind == "stuck":
            self.stuck.setdefault(check_id, header.get("function"))
            return kind, check_id
        elif check_id not in self.outcome and check_id not in self.malformed:
            why = malformed(kind, header)
            if why:
                self.malformed[check_id] = why
            else:
                self.outcome[check_id] = (header, blob)
            return kind, check_id
        return None

    def finished(self) -> set[str]:
        """The checks with an outcome, well-formed or not."""
        return set(self.outcome) | set(self.malformed)


def stray_note(stray: list[str]) -> str:
    """The note on the messages that were ignored (Reading.stray); '' when there were none."""
    if not stray:
        return ""
    return (
        f"The grader ignored {len(stray)} malformed message(s) on its channel "
        f"({stray[0]}); your code may have written to the grader's channel."
    )
