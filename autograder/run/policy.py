"""The crash and timeout policy: one for every placement of a check (engine.py).

Whatever runs the student's code (a forked worker for `make grade` and `make watch`, the
sandbox's confined process for official grading), the trusted parent decides how a check that
did not give a result ends, here:

- time: a check may use `cpu_limit(check, limits)` CPU seconds (the run's limits.TimeLimits,
  made by TimeLimits.of from the run's Settings in every channel alike), read from /proc and
  enforced from outside the student's process (limits.Stopwatch in the worker's parent,
  sandbox/relay.py in the sandbox's monitor): the process is killed, never interrupted by a
  signal inside torch, and the remaining checks run in a fresh one. A process that makes no
  progress (blocked, not computing) is stopped after TimeLimits.stall seconds of wall time:
  `overran`.
- an endless loop costs one CPU limit per function, not one per check (`Stuck`): the
  function charged is the one whose call did not return (`charged`, read from limits.Board),
  none when no single call ran for most of the limit (slow, not endless).
- a crash of the whole process (segfault, os._exit) costs the running check only
  (`EXITED`, `exited`); a channel the student's code wrote into costs the check it
  damaged (`CHANNEL`).
- a failure the student's process reports itself (import error, crash, not attempted) is
  never a pass (`child_result`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Any

from ..core.check import TIMEOUT, Check, Failure, Misconceptions, Result, Status, declared
from .channel import Reading
from .limits import Board, TimeLimits
from .sandbox import wire

misconception = Misconceptions(__name__)

EXITED = misconception(
    "exited-early",
    "Your code ended the grading process ({how}) while this check ran, so it has no result.",
    (
        "A function of the exercise must give its result back to the caller; ending the "
        "whole program leaves the grader with nothing to judge.",
        "Find sys.exit, exit, quit or os._exit in your module (often left from a test at "
        "the bottom of the file) and remove it.",
        "Remove calls to sys.exit(), exit() or os._exit() from your modules: return values.",
    ),
)
STALLED = misconception(
    "stalled",
    "This check made no progress for {seconds:g} s (waiting, not computing: input(), "
    "time.sleep or a lock?), so it was stopped.",
    (
        "An exercise computes and returns; code that waits for input, for time to pass or "
        "for another thread never finishes under the grader.",
        "Look for input(), time.sleep, threading or multiprocessing in your module, also in "
        "code at the top level of the file.",
        "Exercise code never waits: remove input(), sleeps and threads from your module.",
    ),
)
CHANNEL = misconception(
    "channel-broken",
    "The grader could not read this check's result: {why}. Your code may have written to "
    "the grader's own channel.",
    (
        "The grader talks to the process that runs your code through a channel of its own; "
        "something in your module wrote into it.",
        "Look for os.write, os.dup2 or writes to /proc/self/fd in your module: print() "
        "and your own files are fine.",
        "Do not write to file descriptors your code did not open.",
    ),
)
SAME_AS_ABOVE = misconception(
    "timeout-same-as-above",
    "Same as above: {function} did not finish in the check \u201c{check}\u201d, and this check "
    "calls it too, so it was not run (it counts as timed out).",
    (TIMEOUT.hints[0], TIMEOUT.hints[1], TIMEOUT.hints[2]),
)
TOP_LEVEL_SAME = misconception(
    "timeout-top-level-same-as-above",
    "Same as above: the top-level code of {file} did not finish in the check \u201c{check}\u201d, "
    "so no later check of this file was run (they count as timed out).",
    (
        "The code at the top level of a file runs when the file is imported, before any "
        "exercise: if it never ends, no exercise of the file can be graded.",
        "Look at the code outside every function and class: a loop, a test or an experiment "
        "left there runs at every import.",
        'Move tests and experiments under `if __name__ == "__main__":` or delete them.',
    ),
)


def cpu_limit(check: Check, limits: TimeLimits) -> float:
    """The CPU seconds `check` may use, in every placement and every channel: the run's
    TimeLimits (TimeLimits.of: its settings, its references' CPU seconds)."""
    return limits.cpu_limit(check)


def charged(
    check: Check,
    board: object = None,
    slots: Mapping[tuple[str, str], int] | None = None,
    limit: float = 0.0,
) -> str:
    """The function of `check`'s module that did not finish when `check` was stopped after
    `limit` CPU seconds, from what limits.Board says (`board`: its values, read by the
    trusted parent once the process was stopped; `slots`: limits.slots_of the process's
    checks):

    - the innermost tracked function whose call, entered during the check, had run for at
      least half of `limit` without returning: the check's exercise, or another exercise of
      the module that it called (a loop in causal_mask reached through sliding_window_mask is
      causal_mask's; a loop in generate that calls a sound forward again and again is
      generate's, not the model's);
    - "" when the check's exercise was tracked and no call had run that long: a function
      called again and again, each call returning (slow, not endless), or a stop in the
      probe's own code or the kit's. Nothing is charged: the later checks run to their own
      limits, as if this rule did not exist;
    - the check's declared exercise when the board cannot tell (no board; an exercise the
      tracker cannot wrap, such as a bare method name).

    The board is written by the student's process: a wrong answer only moves a timeout (0
    points) between checks, or costs time; nothing here gives a point."""
    values = board if isinstance(board, list) else None
    if values is None or len(values) != Board.SIZE or any(type(v) is not int for v in values):
        return check.exercise
    n = Board.SLOTS
    own = {name: slot for (module, name), slot in (slots or {}).items() if module == check.module}
    own = {name: slot for name, slot in own.items() if 0 <= slot < n}
    started, started_cpu = values[2 * n], values[2 * n + 1]
    latest = started_cpu + limit / 2 * 1e9  # a call entered after this ran less than half
    running = [
        (values[slot], name)
        for name, slot in own.items()
        if values[slot] > started and values[n + slot] <= latest
    ]
    if running:
        return max(running)[1]
    if check.exercise in own and values[own[check.exercise]] != 0:
        return ""
    return check.exercise


class Stuck:
    """What did not finish in one submission's checks, so that an endless loop costs one CPU
    limit per function instead of one per check that calls it.

    Kept by the trusted parent (the worker's parent, the sandbox's runner) from what it knows
    itself: a check that ran out of its CPU seconds was running a function of its module
    (`charged`: the one whose call did not return), or, when the module's import
    had not returned yet, the file's top-level code. `same(check)` gives a later check of that
    exercise (of that file) its result at once: timed out, "same as above", 0 points, never
    run. The later processes guard these functions (`guards`, probing.guard): a check of
    another exercise that calls one ends at once, and `called` gives its result. Nothing here
    can raise a score: every result it gives is a timeout, and a correct function that
    finishes within its limit never lands here; a check stopped while no single call of the
    student's had run for most of its limit charges none (the later checks run to their own
    limits)."""

    def __init__(self) -> None:
        self.functions: dict[tuple[str, str], str] = {}  # (module, function) -> check title
        self.top_level: dict[str, str] = {}  # module -> the title of the check that hung

    def timed_out(
        self,
        check: Check,
        imported: bool = True,
        board: object = None,
        slots: Mapping[tuple[str, str], int] | None = None,
        limit: float = 0.0,
    ) -> None:
        """`check` ran out of its `limit` CPU seconds (`imported`: after its module's import
        returned; `board`, `slots`: where it was, for `charged`)."""
        if not imported:
            self.top_level.setdefault(check.module, check.title)
            return
        function = charged(check, board, slots, limit)
        if function:
            self.functions.setdefault((check.module, function), check.title)

    def guards(self, module: str) -> list[str]:
        """The functions of `module` that did not finish, for probing.guard."""
        return [name for (m, name) in self.functions if m == module]

    def same(self, check: Check) -> Result | None:
        """The result of a later check that would run what did not finish, else None."""
        if check.module in self.top_level:
            failure = Failure(
                TOP_LEVEL_SAME, file=f"{check.module}.py", check=self.top_level[check.module]
            )
            return Result.of(check, "timed out", failure)
        return self.called(check, check.exercise)

    def called(self, check: Check, function: object) -> Result | None:
        """The result of `check`, which called `function` (a guard said so; None when that is
        not a function that did not finish: the message is ignored)."""
        title = self.functions.get((check.module, function)) if isinstance(function, str) else None
        if title is None:
            return None
        return Result.of(check, "timed out", Failure(SAME_AS_ABOVE, function=function, check=title))


def overran(check: Check, why: str, seconds: float) -> Result:
    """The result of a check stopped from outside (limits.Stopwatch.overran, the monitor)."""
    if why == "cpu":
        return Result.of(check, "timed out", Failure(TIMEOUT, seconds=f"{seconds:g}"))
    return Result.of(check, "failed", Failure(STALLED, seconds=seconds))


def stalled(check: Check, seconds: float) -> Result:
    """A later check of a module whose process blocked: a blocked process blocks again."""
    return overran(check, "stall", seconds)


def exited(check: Check, how: str) -> Result:
    """The check that ran when the student's code ended the process (`how`)."""
    return Result.of(check, "failed", Failure(EXITED, how=how))


def channel_broken(check: Check, why: str) -> Result:
    return Result.of(check, "failed", Failure(CHANNEL, why=why))


def how(status: int) -> str:
    """How a process ended, from its wait status: "killed by SIGSEGV", "exit status 3"."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return (
            f"killed by {signal.Signals(sig).name}" if sig in signal.valid_signals() else "killed"
        )
    return f"exit status {os.WEXITSTATUS(status)}"


def child_result(check: Check, header: dict[str, Any]) -> Result:
    """A failure the student's process reported (import error, crash, not attempted): never
    a pass, whatever the message says; its texts bounded, its misconception a declared one."""
    result = Result.of(check, "failed")
    status = header.get("status")
    result.status = Status.NOT_ATTEMPTED if status == Status.NOT_ATTEMPTED else Status.FAILED
    mistake = wire.text(header.get("misconception"), 80)
    result.misconception = mistake if mistake in declared() else "crash"
    result.message = wire.text(header.get("message"))
    result.hint = wire.text(header.get("hint"))
    result.details = wire.details(header.get("details"))
    return result


def settle(check: Check, header: dict[str, Any], blob: bytes) -> Result | dict[str, Any]:
    """A check's outcome message (channel.Reading) as the probe's outputs, to judge, or as
    the Result it already is: a failure the child reported (`child_result`), or outputs the
    child could not send or the parent cannot read (`CHANNEL`)."""
    kind = header.get("type")
    if kind == "result":
        return child_result(check, header)
    if kind == "unencodable":
        return channel_broken(check, wire.text(header.get("why"), 300))
    try:
        return wire.decode_outputs(header.get("outputs"), blob)
    except wire.ChannelError as e:
        return channel_broken(check, str(e))


def outcome(check: Check, reading: Reading, stuck: Stuck) -> Result | dict[str, Any] | None:
    """What the child said about `check` (channel.Reading), settled: a guard said it called a
    function that did not finish (timed out, whatever came after), a malformed outcome, the
    outcome itself; None when the child said nothing of it (the parent decides: stopped,
    exited, not run)."""
    if check.id in reading.stuck:
        same = stuck.called(check, reading.stuck[check.id])
        if same is not None:
            return same
    if check.id in reading.malformed:
        return channel_broken(check, reading.malformed[check.id])
    if check.id in reading.outcome:
        return settle(check, *reading.outcome[check.id])
    return None
