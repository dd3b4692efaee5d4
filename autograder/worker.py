"""Run a submission's probes in a forked worker process; judge them here, in the parent.

`make grade`, the kit's tests and `make watch` grade through `probe_module`: the parent (which
has imported torch and warmed its lazy imports once) forks a worker per module; the worker
draws every check's inputs, imports the student's module and runs the probes, writing one
message per check to a pipe (sandbox/wire.py: JSON + raw tensor bytes, never pickle). The
parent decides everything else:

- time: each check may use `limits.cpu_limit(check)` CPU seconds, read from /proc, so a loaded
  machine never costs a correct solution its points; a check that uses them up is stopped
  from outside (the worker is killed, never interrupted by a signal inside torch) and the
  remaining checks run in a fresh worker, so one slow check costs that check only. A worker
  that stops making progress (blocked, not computing) is stopped after a wall-clock grace.
- an endless loop costs one CPU limit per function, not one per check: once a check of an
  exercise times out, the later checks of that exercise are timed out "same as above"
  without running, and the later workers guard the function (probing.guard), so a check of
  another exercise that calls it ends at once, timed out "same as above" too (`Stuck`).
- crashes of the whole process (segfault, os._exit) cost the running check only.
- what the student's code printed is kept per check (an excerpt) for the feedback.

Batch grading (sandbox/) adds the jail, uids and resource limits around the same protocol.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from . import limits, model_replays
from .core import TIMEOUT, Check, Failure, Result, Status, misconception
from .probing import Attempts, make_inputs
from .registry import all_misconceptions
from .sandbox import wire
from .submission import Submission

OUTPUT_KEEP = 4000  # bytes of printed output kept per check (head and tail)
# Written by the worker on its output pipe after each check's prints, before the check's
# message: the parent cuts the stream there, so a check's prints stay with that check however
# late the parent reads (under load, the next check's prints are already in the pipe when the
# parent reads a message). Student code could print it too: that only moves its own prints.
CHECK_END = b"\x1e\x1f[attention-lab: end of check]\x1f\x1e"

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


class Stuck:
    """What did not finish in one submission's checks, so that an endless loop costs one CPU
    limit per function instead of one per check that calls it.

    Kept by the trusted parent (the worker's parent, the sandbox's runner) from what it knows
    itself: a check that ran out of its CPU seconds was running its exercise (the function or
    class it grades), or, when the module's import had not returned yet, the file's top-level
    code. `same(check)` gives a later check of that exercise (of that file) its result at once:
    timed out, "same as above", 0 points, never run. The later processes guard these functions
    (`guards`, probing.guard): a check of another exercise that calls one ends at once, and
    `called` gives its result. Nothing here can raise a score: every result it gives is a
    timeout, and a correct function that finishes within its limit never lands here."""

    def __init__(self) -> None:
        self.functions: dict[tuple[str, str], str] = {}  # (module, function) -> check title
        self.top_level: dict[str, str] = {}  # module -> the title of the check that hung

    def timed_out(self, check: Check, imported: bool = True) -> None:
        """`check` ran out of its CPU seconds (`imported`: after its module's import returned)."""
        if not imported:
            self.top_level.setdefault(check.module, check.title)
        elif check.exercise:
            self.functions.setdefault((check.module, check.exercise), check.title)

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


@dataclass
class Probed:
    """What the worker reported for one check: outputs to judge, or a Result already."""

    outputs: dict[str, Any] | None = None
    result: Result | None = None
    cpu_seconds: float = 0.0
    printed: str = ""
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- worker side


def _work(
    probes: list[Check],
    submission: str,
    seed: int,
    device: str,
    channel: int,
    guards: tuple[str, ...] = (),
) -> None:
    """The forked worker (it inherits the parent's memory, checks included): never returns.
    `guards`: the functions of the module that did not finish in an earlier worker."""
    try:
        torch.set_num_threads(1)  # OpenMP is not fork-safe beyond one thread
        # What only this module needs (the meta device's kernels, matplotlib), before any
        # student code and outside every check's CPU seconds; the parent warmed the rest.
        limits.warm_up(*limits.warm_ups_of(probes))
        inputs = {p.id: make_inputs(p, seed) for p in probes}  # before any student import
        model_replays.seal()  # student code here: the copy's models answer verdicts only
        sub = Submission(submission)
        run = Attempts(
            sub, lambda message: wire.send(channel, message), {probes[0].module: list(guards)}
        )
        for p in probes:
            wire.send(channel, {"type": "start", "check": p.id})
            got = run(p, inputs[p.id], device)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            try:
                os.write(1, CHECK_END)
            except BaseException:
                pass
            if isinstance(got, Result):
                message = {
                    "type": "result",
                    "check": p.id,
                    "status": str(got.status),
                    "misconception": got.misconception,
                    "message": got.message,
                    "hint": got.hint,
                    "details": got.details,
                }
                wire.send(channel, message)
                continue
            try:
                described, blob = wire.encode_outputs(got)
            except Exception as e:
                wire.send(channel, {"type": "unencodable", "check": p.id, "why": str(e)[:300]})
                continue
            wire.send(channel, {"type": "outputs", "check": p.id, "outputs": described}, blob)
        wire.send(channel, {"type": "done"})
    except BaseException:
        try:
            os.write(2, f"[grader] worker error:\n{traceback.format_exc()}".encode())
        except BaseException:
            pass
    finally:
        os._exit(0)


def _fork(
    checks: list[Check], submission: str, seed: int, device: str, guards: Iterable[str] = ()
) -> tuple[int, int, int]:
    channel_r, channel_w = os.pipe()
    output_r, output_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            os.setsid()
            os.close(channel_r)
            os.close(output_r)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(output_w, 1)
            os.dup2(output_w, 2)
            # The parent's sys.stdout may be pytest's capture, not fd 1: write to the pipe.
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            for name in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGALRM"):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        except BaseException:
            os._exit(1)
        _work(checks, submission, seed, device, channel_w, tuple(guards))
    os.close(channel_w)
    os.close(output_w)
    return pid, channel_r, output_r


# --------------------------------------------------------------------------- parent side


class _Run:
    """One worker process over a list of checks, read until it ends or is stopped."""

    def __init__(
        self,
        checks: list[Check],
        submission: Submission,
        seed: int,
        device: str,
        stuck: Stuck | None = None,
    ):
        self.checks = {c.id: c for c in checks}
        self.stuck = stuck or Stuck()
        guards = self.stuck.guards(checks[0].module)
        self.pid, self.channel, self.output = _fork(
            checks, str(submission.path), seed, device, guards
        )
        os.set_blocking(self.output, False)
        self.buffer = bytearray()
        self.watch = limits.Stopwatch(self.pid, lambda c: limits.cpu_limit(self.checks[c]))
        self.printed: dict[str | None, bytearray] = {}
        self.stream = _Segments()
        self.probed: dict[str, Probed] = {}
        self.stopped: tuple[str, Result] | None = None
        self.loaded: set[str] = set()  # checks whose module's import returned
        self.called: dict[str, Result] = {}  # checks that called a guarded function
        self.done = False
        self.open: set[int] = set()

    def _message(self, header: dict[str, Any], blob: bytes) -> None:
        kind, check_id = header.get("type"), header.get("check")
        if kind == "done":
            self.done = True
            return
        if not isinstance(check_id, str) or check_id not in self.checks:
            return
        check = self.checks[check_id]
        if kind == "start":
            self.watch.start(check_id)
            return
        if kind in ("loaded", "stuck"):
            if check_id == self.current and check_id not in self.probed:
                if kind == "loaded":
                    self.loaded.add(check_id)
                else:
                    same = self.stuck.called(check, header.get("function"))
                    if same is not None:
                        self.called.setdefault(check_id, same)
            return
        if check_id in self.probed or kind not in ("result", "outputs", "unencodable"):
            return
        self._drain_output()  # the worker flushed its prints and CHECK_END before this message
        self.printed[check_id] = self.stream.next_segment()
        probed = Probed(cpu_seconds=self.watch.finish())
        if kind == "result":
            probed.result = _child_result(check, header)
        elif kind == "unencodable":
            why = wire.text(header.get("why"), 300)
            probed.result = Result.of(check, "failed", Failure(CHANNEL, why=why))
        else:
            try:
                probed.outputs = wire.decode_outputs(header.get("outputs"), blob)
            except wire.ChannelError as e:
                probed.result = Result.of(check, "failed", Failure(CHANNEL, why=str(e)))
        if check_id in self.called:  # whatever came after: it called what did not finish
            probed.result, probed.outputs = self.called[check_id], None
        self.probed[check_id] = probed

    def _drain_output(self) -> None:
        """Whatever the worker printed that is already in the pipe, for the current check."""
        while True:
            try:
                data = os.read(self.output, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            self.stream.feed(data)

    def _read(self, fd: int) -> bool:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            return False
        if fd == self.channel:
            self.buffer += data
            messages, rest, broken = wire.split(self.buffer)
            self.buffer = bytearray(rest)
            for header, blob in messages:
                self._message(header, blob)
            if broken and self.current is not None and self.current not in self.probed:
                check = self.checks[self.current]
                self.probed[self.current] = Probed(
                    result=Result.of(check, "failed", Failure(CHANNEL, why=broken))
                )
        else:
            self.stream.feed(data)
        return True

    def register(self, sel: selectors.BaseSelector) -> None:
        self.open = {self.channel, self.output}
        for fd in self.open:
            sel.register(fd, selectors.EVENT_READ, self)

    def readable(self, sel: selectors.BaseSelector, fd: int) -> None:
        if not self._read(fd):
            sel.unregister(fd)
            self.open.discard(fd)

    def tick(self) -> None:
        if self._overran():
            limits.stop(self.pid)

    def finish(self, sel: selectors.BaseSelector) -> None:
        """Once both pipes are closed (or to abandon the run): close, kill, reap."""
        for fd in (self.channel, self.output):
            if fd in self.open:
                sel.unregister(fd)
            os.close(fd)
        self.open = set()
        limits.stop(self.pid)
        _, status = os.waitpid(self.pid, 0)
        if self.current is not None and self.current not in self.probed:
            self.printed[self.current] = self.stream.rest()
        if not self.done and self.current is not None and self.stopped is None:
            check = self.checks[self.current]
            how = _how(status)
            self.stopped = (self.current, Result.of(check, "failed", Failure(EXITED, how=how)))

    @property
    def current(self) -> str | None:
        return self.watch.current

    def _overran(self) -> bool:
        current, over = self.watch.current, self.watch.overran()
        if current is None or over is None:
            return False
        self.stopped = (current, overran(self.checks[current], *over))
        return True


class _Segments:
    """The worker's output stream cut at each CHECK_END: one segment per finished check, in
    order, each kept to 2 * OUTPUT_KEEP bytes (a check that prints gigabytes costs no memory)."""

    def __init__(self) -> None:
        self.done: list[bytearray] = []
        self.open = bytearray()  # the segment being written
        self.tail = b""  # the end of the stream that may be the start of a CHECK_END

    def feed(self, data: bytes) -> None:
        data = self.tail + data
        pieces = data.split(CHECK_END)
        for piece in pieces[:-1]:
            self._keep(piece)
            self.done.append(self.open)
            self.open = bytearray()
        last = pieces[-1]
        hold = next(
            (
                n
                for n in range(min(len(last), len(CHECK_END) - 1), 0, -1)
                if CHECK_END.startswith(last[-n:])
            ),
            0,
        )
        self._keep(last[: len(last) - hold])
        self.tail = last[len(last) - hold :]

    def _keep(self, piece: bytes) -> None:
        self.open += piece[: max(0, 2 * OUTPUT_KEEP - len(self.open))]

    def next_segment(self) -> bytearray:
        """The prints of the check whose message just came (its CHECK_END is in the pipe);
        without one (the student closed fd 1), whatever was printed since the last."""
        if self.done:
            return self.done.pop(0)
        return self.rest()

    def rest(self) -> bytearray:
        """What was printed after the last CHECK_END: the check that was stopped or ended."""
        self._keep(self.tail)
        found, self.open, self.tail = self.open, bytearray(), b""
        return found


def overran(check: Check, why: str, seconds: float) -> Result:
    """The result of a check stopped from outside (limits.Stopwatch.overran)."""
    if why == "cpu":
        return Result.of(check, "timed out", Failure(TIMEOUT, seconds=f"{seconds:g}"))
    return Result.of(check, "failed", Failure(STALLED, seconds=seconds))


def _child_result(check: Check, header: dict[str, Any]) -> Result:
    """A failure the worker reported (import error, crash, not attempted): never a pass."""
    result = Result.of(check, "failed")
    status = header.get("status")
    result.status = Status.NOT_ATTEMPTED if status == Status.NOT_ATTEMPTED else Status.FAILED
    mistake = wire.text(header.get("misconception"), 80)
    result.misconception = mistake if mistake in all_misconceptions() else "crash"
    result.message = wire.text(header.get("message"))
    result.hint = wire.text(header.get("hint"))
    result.details = wire.details(header.get("details"))
    return result


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return (
            f"killed by {signal.Signals(sig).name}" if sig in signal.valid_signals() else "killed"
        )
    return f"exit status {os.WEXITSTATUS(status)}"


def _excerpt(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if len(text) <= OUTPUT_KEEP:
        return text
    return text[: OUTPUT_KEEP // 2] + "\n[...]\n" + text[-OUTPUT_KEEP // 2 :]


class _Job:
    """One module's checks: workers one after another until every check has a result."""

    def __init__(self, checks: list[Check], submission: Submission, seed: int, device: str):
        self.module = checks[0].module
        self.args = (submission, seed, device)
        self.todo = list(checks)
        self.found: dict[str, Probed] = {}
        self.stuck = Stuck()
        self.run = _Run(self.todo, *self.args, self.stuck)

    def settle(self) -> bool:
        """After the current run finished: record it; start the next run if checks remain.
        True when every check has its Probed."""
        run, found, todo = self.run, self.found, self.todo
        for check_id, probed in run.probed.items():
            probed.printed = _excerpt(bytes(run.printed.get(check_id, b"")))
            found[check_id] = probed
        if run.stopped:
            check_id, result = run.stopped
            found[check_id] = Probed(
                result=result, printed=_excerpt(bytes(run.printed.get(check_id, b"")))
            )
            if result.status == Status.TIMED_OUT:
                self.stuck.timed_out(run.checks[check_id], imported=check_id in run.loaded)
            if result.misconception == STALLED.id:  # a blocked worker blocks again: stop here
                for check in todo:
                    if check.id not in found:
                        found[check.id] = Probed(
                            result=Result.of(
                                check, "failed", Failure(STALLED, seconds=limits.stall_seconds())
                            )
                        )
        for check in todo:
            same = None if check.id in found else self.stuck.same(check)
            if same is not None:  # it would run what did not finish: timed out, not run
                found[check.id] = Probed(result=same)
        remaining = [c for c in todo if c.id not in found]
        if len(remaining) == len(todo):  # no progress at all: never loop forever
            for check in remaining:
                found[check.id] = Probed(
                    result=Result.of(check, "failed", Failure(EXITED, how="before it started"))
                )
            remaining = []
        self.todo = remaining
        if remaining:
            self.run = _Run(remaining, *self.args, self.stuck)
        return not remaining


def default_jobs() -> int:
    """Workers at once: one per core this process may use, at most two (a worker is one
    thread; the grading process judges beside them)."""
    return max(1, min(2, len(os.sched_getaffinity(0))))


class Pool:
    """The workers of several modules, `jobs` at a time, started ahead of the verdicts and
    read in one loop here: `result(module)` drives them until that module is done (the
    others keep going while the grading process judges). Each module still gets its own
    forked worker, with the same limits as one at a time."""

    def __init__(
        self,
        groups: dict[str, list[Check]],
        submission: Submission,
        seed: int,
        device: str = "cpu",
        jobs: int | None = None,
    ):
        self.args = (submission, seed, device)
        self.jobs = jobs or default_jobs()
        self.waiting = {module: checks for module, checks in groups.items() if checks}
        self.live: list[_Job] = []
        self.done: dict[str, dict[str, Probed]] = {}
        self.sel = selectors.DefaultSelector()
        limits.warm_up()

    def result(self, module: str, checks: list[Check] | None = None) -> dict[str, Probed]:
        """{check id: Probed} for `module` (its checks as given at the start, or `checks`)."""
        if module not in self.done and module not in self.waiting:
            if not any(job.module == module for job in self.live):
                self.waiting = {module: list(checks or []), **self.waiting}
        while module not in self.done:
            self._fill(first=module)
            self._step()
        return self.done.pop(module)

    def _fill(self, first: str) -> None:
        while len(self.live) < self.jobs and self.waiting:
            module = first if first in self.waiting else next(iter(self.waiting))
            checks = self.waiting.pop(module)
            if not checks:
                self.done[module] = {}
                continue
            job = _Job(checks, *self.args)
            job.run.register(self.sel)
            self.live.append(job)

    def _step(self) -> None:
        for key, _ in self.sel.select(timeout=0.05):
            key.data.readable(self.sel, key.fd)
        for job in list(self.live):
            job.run.tick()
            if job.run.open:
                continue
            job.run.finish(self.sel)
            if job.settle():
                self.live.remove(job)
                self.done[job.module] = job.found
            else:
                job.run.register(self.sel)

    def close(self) -> None:
        """Stop every worker still running (grading ended early: Ctrl-C, an error)."""
        for job in self.live:
            job.run.finish(self.sel)
        self.live, self.waiting = [], {}
        self.sel.close()


def probe_module(
    checks: list[Check], submission: Submission, seed: int, device: str = "cpu"
) -> dict[str, Probed]:
    """Run the probes of `checks` (one module's) in workers; {check id: Probed}."""
    if not checks:
        return {}
    pool = Pool({checks[0].module: checks}, submission, seed, device, jobs=1)
    try:
        return pool.result(checks[0].module)
    finally:
        pool.close()
