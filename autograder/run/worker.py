"""The forked-worker placement of a check (make grade, make watch, the kit's tests).

`probe_module` and `Pool`: the parent (which has imported torch and warmed its lazy imports
once) forks a worker per module; the worker draws every check's inputs, imports the student's
module and runs the probes, speaking the one message loop (channel.py: channel.probe_all on
this side, channel.Reading on the parent's). The parent decides everything else by the one
crash and timeout policy (policy.py): CPU seconds per check read from /proc and enforced from
outside (the worker is killed; the remaining checks run in a fresh one), a wall-clock grace
for a worker that makes no progress, one CPU limit per function for an endless loop
(policy.Stuck: the function whose call did not return, read from a limits.Board the parent
shares with the worker), a crash of the whole process costing the running check only. What the
student's code printed is kept per check (an excerpt) for the feedback. The verdicts run in
the parent (engine.grade_module, engine.verdict).

The sandbox's placement (sandbox/) adds the jail, uids and resource limits around the same
message loop and policy.
"""

from __future__ import annotations

import os
import selectors
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from ..core import model_replays
from ..core.check import Check, Result, Status
from . import channel, limits, measure, policy
from .forkserver import settle
from .limits import Board, Stopwatch, TimeLimits, slots_of, warm_up, warm_ups_of
from .policy import STALLED, Stuck
from .probing import Attempts, make_inputs
from .sandbox import wire
from .submission import Submission

OUTPUT_KEEP = 4000  # bytes of printed output kept per check (head and tail)
# Written by the worker on its output pipe after each check's prints, before the check's
# message: the parent cuts the stream there, so a check's prints stay with that check however
# late the parent reads (under load, the next check's prints are already in the pipe when the
# parent reads a message). Student code could print it too: that only moves its own prints.
CHECK_END = b"\x1e\x1f[attention-lab: end of check]\x1f\x1e"


@dataclass
class Probed:
    """What the worker reported for one check: outputs to judge, or a Result already."""

    outputs: dict[str, Any] | None = None
    result: Result | None = None
    cpu_seconds: float = 0.0
    printed: str = ""
    notes: list[str] = field(default_factory=list)
    # What the parent measured of the process that ran a part of a measured check (measure.py).
    measured: dict[str, float] | None = None


# --------------------------------------------------------------------------- worker side


def _work(
    probes: list[Check],
    submission: str,
    seed: int,
    device: str,
    channel_fd: int,
    guards: tuple[str, ...] = (),
    board: Board | None = None,
    handshake: tuple[int, int] | None = None,
) -> None:
    """The forked worker (it inherits the parent's memory, checks included): never returns.
    `guards`: the functions of the module that did not finish in an earlier worker; `board`:
    where the worker says which exercise runs (limits.Board, shared with the parent).
    `handshake`: (ready, go) of a measured part's run (measure.py), before any student code."""
    try:
        torch.set_num_threads(1)  # OpenMP is not fork-safe beyond one thread
        # Before any student code and outside every check's CPU seconds; the parent (Pool)
        # paid these already, and a parent that forks this function another way pays here.
        limits.warm_up(*limits.warm_ups_of(probes))
        inputs = {p.id: make_inputs(p, seed) for p in probes}  # before any student import
        model_replays.seal()  # student code here: the copy's models answer verdicts only
        sub = Submission(submission)
        if handshake is not None:  # the parent reads this process's baseline now
            measure.child_handshake(*handshake)
        run = Attempts(
            sub,
            lambda message: wire.send(channel_fd, message),
            {probes[0].module: list(guards)},
            board,
            limits.slots_of(probes),
        )

        def end_of_check() -> None:  # the check's prints, then CHECK_END, then its message
            wire.flush_streams()
            try:
                os.write(1, CHECK_END)
            except BaseException:
                pass

        channel.probe_all(
            probes,
            inputs,
            lambda p, x: run(p, x, device),
            lambda message, blob=b"": wire.send(channel_fd, message, blob),
            after=end_of_check,
        )
    except BaseException:
        wire.last_words("worker")
    finally:
        os._exit(0)


def _fork(
    checks: list[Check],
    submission: str,
    seed: int,
    device: str,
    guards: Iterable[str] = (),
    board: Board | None = None,
    handshake: tuple[int, int, int, int] | None = None,
) -> tuple[int, int, int]:
    channel_r, channel_w = os.pipe()
    output_r, output_w = os.pipe()
    settle()  # the usual collector in the worker, the parent's imports frozen (forkserver.py)
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            os.setsid()
            os.close(channel_r)
            os.close(output_r)
            if handshake is not None:
                os.close(handshake[0])
                os.close(handshake[3])
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(output_w, 1)
            os.dup2(output_w, 2)
            # The parent's sys.stdout may be pytest's capture, not fd 1: write to the pipe.
            wire.student_streams()
            for name in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGALRM"):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        except BaseException:
            os._exit(1)
        ends = (handshake[1], handshake[2]) if handshake is not None else None
        _work(checks, submission, seed, device, channel_w, tuple(guards), board, ends)
    os.close(channel_w)
    os.close(output_w)
    if handshake is not None:
        os.close(handshake[1])
        os.close(handshake[2])
    return pid, channel_r, output_r


# --------------------------------------------------------------------------- parent side


class _Grading(NamedTuple):
    """What every worker of a Pool is given: the submission, the seed of the inputs, the
    device, and the run's time limits."""

    submission: Submission
    seed: int
    device: str
    limits: TimeLimits


class _Run:
    """One worker process over a list of checks, read until it ends or is stopped. A part of
    a measured check runs alone in its run, measured from here (measure.py)."""

    def __init__(self, checks: list[Check], grading: _Grading, stuck: Stuck | None = None):
        submission, seed, device, limits = grading
        self.checks = {c.id: c for c in checks}
        self.stuck = stuck or Stuck()
        guards = self.stuck.guards(checks[0].module)
        self.board = Board()  # shared with the worker: which exercise runs (policy.charged)
        self.slots = slots_of(checks)
        self.where: list[int] | None = None  # the board, read once the worker was stopped
        measured = checks[0].part is not None
        handshake = measure.pipes() if measured else None
        self.pid, self.channel, self.output = _fork(
            checks, str(submission.path), seed, device, guards, self.board, handshake
        )
        self.baseline: measure.Baseline | None = None
        self.measured: dict[str, float] | None = None
        if handshake is not None:  # the worker waits until its baseline is read
            ready_r, go_w = handshake[0], handshake[3]
            self.baseline = measure.Baseline.take(self.pid, ready_r, go_w, limits.stall)
        os.set_blocking(self.output, False)
        self.buffer = bytearray()
        self.watch = Stopwatch(
            self.pid,
            lambda c: policy.cpu_limit(self.checks[c], limits),
            limits.stall,
            order=list(self.checks),
        )
        self.printed: dict[str | None, bytearray] = {}
        self.stream = _Segments()
        self.probed: dict[str, Probed] = {}
        self.stopped: tuple[str, Result] | None = None
        self.reading = channel.Reading(self.checks)  # what the worker said (channel.py)
        self.done = False
        self.open: set[int] = set()

    def _message(self, header: dict[str, Any], blob: bytes) -> None:
        event = self.reading.take(header, blob)
        if event is None:
            return
        kind, check_id = event
        if kind == "done":
            self.done = True
        elif kind == "start":
            self.watch.start(check_id)
        elif kind in channel.OUTCOMES and check_id not in self.probed:
            self._drain_output()  # the worker flushed its prints and CHECK_END before this
            self.printed[check_id] = self.stream.next_segment()
            used = self.watch.outcome(check_id)  # None: not the running check's (forged)
            probed = Probed(cpu_seconds=used or 0.0)
            settled = policy.outcome(self.checks[check_id], self.reading, self.stuck)
            if isinstance(settled, Result):
                probed.result = settled
            else:
                probed.outputs = settled
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
                self.probed[self.current] = Probed(result=policy.channel_broken(check, broken))
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
        _, status, usage = os.wait4(self.pid, 0)
        if not self.board.memory.closed:
            self.where = self.board.values()
            self.board.close()
        if self.baseline is not None:
            self.measured = self.baseline.measured(usage)
        if self.current is not None and self.current not in self.probed:
            self.printed[self.current] = self.stream.rest()
        if not self.done and self.current is not None and self.stopped is None:
            check = self.checks[self.current]
            self.stopped = (self.current, policy.exited(check, policy.how(status)))

    @property
    def current(self) -> str | None:
        return self.watch.current

    def _overran(self) -> bool:
        current, over = self.watch.current, self.watch.overran()
        if current is None or over is None:
            return False
        self.stopped = (current, policy.overran(self.checks[current], *over))
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


def _excerpt(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if len(text) <= OUTPUT_KEEP:
        return text
    return text[: OUTPUT_KEEP // 2] + "\n[...]\n" + text[-OUTPUT_KEEP // 2 :]


class _Job:
    """One module's checks: workers one after another until every check has a result; each
    part of a measured check in a worker of its own, after the others (measure.py)."""

    def __init__(self, checks: list[Check], grading: _Grading):
        self.module = checks[0].module
        self.grading = grading
        self.stall = grading.limits.stall
        self.checks = list(checks)
        self.todo = [c for c in checks if not c.measured]
        self.todo += [part for c in checks for part in c.parts()]
        self.found: dict[str, Probed] = {}
        self.stuck = Stuck()
        self.run = _Run(self._next(), self.grading, self.stuck)

    def _next(self) -> list[Check]:
        """The checks of the next run: the plain ones together, a measured part alone."""
        if self.todo[0].part is not None:
            return self.todo[:1]
        return [c for c in self.todo if c.part is None]

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
                self.stuck.timed_out(
                    run.checks[check_id],
                    imported=check_id in run.reading.loaded,
                    board=run.where,
                    slots=run.slots,
                    limit=run.watch.limit(check_id),
                )
            if result.misconception == STALLED.id:  # a blocked worker blocks again: stop here
                for check in todo:
                    if check.id not in found:
                        found[check.id] = Probed(result=policy.stalled(check, self.stall))
        for check in todo:
            same = None if check.id in found else self.stuck.same(check)
            if same is not None:  # it would run what did not finish: timed out, not run
                found[check.id] = Probed(result=same)
        ran = list(run.checks.values())
        if all(c.id not in found for c in ran):  # no progress at all: never loop forever
            for check in ran:
                found[check.id] = Probed(result=policy.exited(check, "before it started"))
        for check in ran:
            if check.part is not None and check.id in found:
                found[check.id].measured = run.measured
        self.todo = [c for c in todo if c.id not in found]
        if self.todo:
            self.run = _Run(self._next(), self.grading, self.stuck)
            return False
        for check in self.checks:  # each measured check, from its parts
            if check.measured:
                parts = [found.pop(part.id) for part in check.parts()]
                outcome = measure.merge(
                    check, [(p.result or p.outputs or {}, p.measured) for p in parts]
                )
                merged = Probed(cpu_seconds=sum(p.cpu_seconds for p in parts))
                merged.printed = "".join(p.printed for p in parts)
                if isinstance(outcome, Result):
                    merged.result = outcome
                else:
                    merged.outputs = outcome
                found[check.id] = merged
        return True


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
        *,
        limits: TimeLimits,
    ):
        """`limits`: the run's time limits (limits.TimeLimits)."""
        self.grading = _Grading(submission, seed, device, limits)
        self.jobs = jobs or default_jobs()
        self.waiting = {module: checks for module, checks in groups.items() if checks}
        self.live: list[_Job] = []
        self.done: dict[str, dict[str, Probed]] = {}
        self.sel = selectors.DefaultSelector()
        # torch's lazy first uses, and those the modules declare (the meta device, matplotlib,
        # an optimizer's step), once in this process: each module's worker inherits them, and
        # a process that grades again (the kit's tests, the tools) pays them once, not per fork.
        warm_up(*warm_ups_of(c for checks in self.waiting.values() for c in checks))

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
            job = _Job(checks, self.grading)
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
    checks: list[Check],
    submission: Submission,
    seed: int,
    device: str = "cpu",
    *,
    limits: TimeLimits,
) -> dict[str, Probed]:
    """Run the probes of `checks` (one module's) in workers, under `limits`; {check id:
    Probed}."""
    if not checks:
        return {}
    pool = Pool({checks[0].module: checks}, submission, seed, device, jobs=1, limits=limits)
    try:
        return pool.result(checks[0].module)
    finally:
        pool.close()
