"""`make watch [EX=m]`: re-grade a module as soon as its file is saved.

The watcher is the one pre-fork server (run/forkserver.py, as the warm grader of make grade
is): one long-lived process that pays for importing torch, the checks, the trusted stand-ins
and the reference outputs once. Between rounds of its event loop (ForkServer.step) it looks at
the modification times of the submission's module files (every POLL seconds: no
file-watching dependency, and it works on every file system). When a file changes, a forked
child (ForkServer.fork) grades that module from the warm state with the one runner
(engine.grade_module: probes in forked workers, the one message loop, judge loop and crash and
timeout policy, run/channel.py and run/policy.py, under the run's TimeLimits, limits.TimeLimits.of
its settings as in every channel), prints the table, and sends its results and its section of
the HTML report back on a pipe; the parent merges them into build/results.json and
build/report.html as `make grade EX=m` does (sinks.py, publish.py: every module graded so far,
at its latest).

Student code runs only in the child's workers, so nothing it does reaches the watcher: a
syntax error or an exception is a failed check as in `make grade`; a check that runs past its
CPU limit is stopped from outside as in `make grade` (worker.py), and the later checks that
would run the function that did not finish are marked "timed out", same as above, without
running (policy.Stuck); and a child that still does not finish (a loop inside one long C call,
os._exit, a crash of the interpreter) is killed at a hard deadline (--hard-limit). Saving
again while a module is being graded stops that grading and starts over with the new file.
Ctrl-C ends the watcher and its child cleanly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import os
import signal
import sys
import time
from collections.abc import Sequence

import torch

from ..core import registry
from ..core.check import Check, Outputs, Result, Status
from ..core.dispatch import OpCounter
from ..core.i18n import _
from ..core.references import References
from ..core.settings import Settings
from ..feedback import sinks
from ..run import engine, limits, waiting
from ..run.forkserver import ForkServer
from ..run.limits import TimeLimits
from ..run.submission import Submission, trusted_modules

POLL = 0.2  # seconds between two looks at the files' modification times
GRACE = 5.0  # seconds a stopped grading has to stop its workers before it is killed


class Stopped(BaseException):
    """Raised in a grading child on SIGTERM (a new save, the hard limit, Ctrl-C): it unwinds,
    and the worker pool's clean-up stops the workers that run the student's code."""


def _stopped(*_: object) -> None:
    raise Stopped


PRINTED = 20000  # characters of a check's printed output kept


class _Bounded(io.StringIO):
    """Keeps the first PRINTED characters a check prints, drops the rest (a print in an
    endless loop must not fill the memory)."""

    def write(self, text: str) -> int:
        room = PRINTED - self.tell()
        if room > 0:
            super().write(text[:room])
        return len(text)


# --------------------------------------------------------------------------- the child


def grade_module(
    submission, module: str, refs: References, *, device: str, outputs: dict, time: TimeLimits
) -> list[Result]:
    """Grade every fast check of `module` as `make grade` does (engine.grade_module: the
    probes run in a worker with CPU-second limits `time`, stopped from outside; what the
    student's code printed lands in Result.extra["printed"]; its outputs in `outputs`, for
    the report)."""
    checks = [c for c in registry.checks_of(module) if not c.slow]
    return engine.grade_module(checks, submission, refs, device, outputs=outputs, limits=time)


def slow_checks(modules: list[str]) -> list[Check]:
    """The checks of `modules` watch leaves to `make grade-train` (the training runs)."""
    return [c for m in modules for c in registry.checks_of(m) if c.slow]


def _child(
    write_fd: int,
    modules: list[str],
    settings: Settings,
    refs: References,
    budget: TimeLimits,
    known: Sequence[Result] = (),
) -> int:
    """The forked child (ForkServer.fork): grade, print the table, send results and report
    sections; its exit status. `budget`: the run's time limits (TimeLimits.of its settings);
    `known`: the other watched modules' last results (what an own dependency's decide)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    status = 0
    device = settings.device
    try:
        signal.signal(signal.SIGTERM, _stopped)  # the watcher stops this grading
        submission = Submission(settings.submission.resolve())
        results: list[Result] = []
        outputs: dict[str, Outputs] = {}
        for module in modules:
            results += grade_module(
                submission, module, refs, device=device, outputs=outputs, time=budget
            )

        def quietly(more: list[str]) -> list[Result]:
            return [
                r
                for m in more
                for r in grade_module(submission, m, refs, device=device, outputs={}, time=budget)
            ]

        # Checks that wait on an own dependency failing its checks (student copy: waiting.py)
        others = [r for r in known if r.module not in modules]
        results = waiting.hold(results + others, submission, quietly)
        results = [r for r in results if r.module in modules]
        title = _("Attention Lab watch: {modules}").format(
            modules=", ".join(m + ".py" for m in modules)
        )
        # Each save is an attempt (the hint ladder); the table; the report's sections, drawn
        # here, where the student's outputs are: the parent merges them (sinks.py).
        result_set = sinks.ResultSet(
            str(submission.path), results, title=title, folder=submission.path
        )
        result_set.left_out = slow_checks(modules)
        sinks.publish(
            result_set,
            [
                sinks.HintState(submission.path, state=settings.hint_state),
                sinks.Table(),
                sinks.ReportSections(submission, refs, outputs),
            ],
        )
        payload = {
            "results": [dataclasses.asdict(r) for r in results],
            "sections": result_set.sections,
            "graded_at": result_set.graded_at,
        }
        data = json.dumps(payload, default=str).encode()
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
    except Stopped:  # the watcher stopped it: the workers are stopped (worker.Pool.close)
        status = 143
    except BaseException as e:  # said here; ForkServer.fork never returns into the loop
        stopped = _("watch: grading stopped: {error}").format(error=f"{type(e).__name__}: {e}")
        print(stopped, file=sys.stderr, flush=True)
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return status


# --------------------------------------------------------------------------- the parent


def _warm_up() -> None:
    """Pay torch's lazy start-up costs once, here, instead of in every child: the pre-fork
    server's warm-up (ForkServer.warm: one thread, since a thread pool started before a fork
    is not safe to use in the child; every kind of limits.WARM_UPS, matplotlib's among them),
    and what the watch's checks use beyond it (op counting, an optimizer step, the
    comparisons)."""
    ForkServer.warm(*limits.WARM_UPS)
    x = torch.randn(2, 3, 4, requires_grad=True)
    with OpCounter():
        y = torch.softmax(x @ x.transpose(-2, -1) / 2.0, dim=-1)
    y.sum().backward()
    optimizer = torch.optim.Adam([x], lr=0.1)
    optimizer.step()
    optimizer.zero_grad()
    torch.testing.assert_close(x, x)


class Watcher:
    def __init__(self, settings: Settings, modules: Sequence[str] = (), hard_limit: float = 120.0):
        self.settings = settings
        self.folder = settings.submission.resolve()
        self.modules = list(modules) or registry.modules()
        self.results_path = settings.results
        self.report_path = self.results_path.parent / "report.html"
        self.hard_limit = hard_limit
        # Warm everything a child needs, so a fork starts graded work at once.
        for name in trusted_modules():
            importlib.import_module(f"autograder.trusted.{name}")
        self.refs = References.public()
        for m in self.modules:  # load (and check) the fixtures once, before any fork
            self.refs.module(m)
        # the run's time limits, as in every channel (limits.TimeLimits.of its settings)
        self.time = self.refs.time_limits(settings)
        _warm_up()
        self.server = ForkServer()
        ForkServer.ready()
        # {module: its latest results}: what a later grading's waits are decided from
        self.results: dict[str, list[Result]] = {}
        # the grading under way: pid, the pipe's read end, its start, its modules
        self.child: tuple[int, int, float, list[str]] | None = None
        self.buffer = b""
        self.stopping: dict[int, float] = {}  # stopped gradings not ended yet: pid -> deadline

    def mtimes(self) -> dict[str, int]:
        """Every exercise file's, watched or not: a watched module may run an unwatched one
        as its own dependency (the student copy; see `to_grade`)."""
        found = {}
        for m in registry.modules():
            try:
                found[m] = self.folder.joinpath(f"{m}.py").stat().st_mtime_ns
            except OSError:
                found[m] = -1
        return found

    def start(self, modules: list[str]) -> None:
        """Fork a child (ForkServer.fork) that grades `modules` and sends back what it found."""
        self.stop_child()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        sys.stdout.flush()
        sys.stderr.flush()
        known = [r for rs in self.results.values() for r in rs]

        def child() -> int:  # the fork closed read_fd (close=) and the server's loop
            return _child(write_fd, modules, self.settings, self.refs, self.time, known)

        pid = self.server.fork(
            child, close=[read_fd], on_exit=lambda status: self.ended(pid, status)
        )
        os.close(write_fd)
        self.child, self.buffer = (pid, read_fd, time.monotonic(), modules), b""
        self.server.watch(read_fd, self.read)

    def read(self, fd: int) -> None:
        """Take what the child sent on its pipe (all there is now; at its end, stop looking)."""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self.server.unwatch(fd)
                return
            self.buffer += chunk

    def stop_child(self) -> None:
        """Stop the grading under way (a new save, the hard limit, Ctrl-C): SIGTERM, so that it
        stops its workers (Stopped), then SIGKILL after GRACE seconds (`kill_late`). The server
        reaps it (its on_exit finds it is no longer the current one)."""
        if self.child is None:
            return
        pid, fd = self.child[:2]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        self.stopping[pid] = time.monotonic() + GRACE
        self.server.unwatch(fd)
        os.close(fd)
        self.child = None

    def kill_late(self, wait: float = 0.0) -> None:
        """Kill the stopped gradings past their grace; with `wait`, first give them up to
        that many seconds to end (Ctrl-C)."""
        end = time.monotonic() + wait
        while self.stopping and time.monotonic() < end:
            self.server.step(0.1)
        for pid, deadline in list(self.stopping.items()):
            if wait or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                del self.stopping[pid]

    def ended(self, pid: int, status: int) -> None:
        """A child ended (ForkServer's on_exit): the current one's results are recorded."""
        self.stopping.pop(pid, None)
        if self.child is None or self.child[0] != pid:
            return  # stopped earlier: nothing of it is wanted
        _pid, fd, started, modules = self.child
        self.read(fd)  # what it wrote before it ended
        self.server.unwatch(fd)
        os.close(fd)
        self.child = None
        self.finish(modules, status, time.monotonic() - started)

    def poll_child(self, timeout: float) -> None:
        """One round of the server's event loop (the child's pipe, its end); a grading past
        the hard limit is stopped."""
        self.server.step(timeout)
        self.kill_late()
        if self.child is None:
            return
        started, modules = self.child[2], self.child[3]
        if time.monotonic() - started > self.hard_limit:
            self.stop_child()
            text = _(
                "watch: grading {modules} did not finish within {seconds} s and was stopped "
                "(an endless loop?). Fix it and save again."
            ).format(modules=", ".join(modules), seconds=f"{self.hard_limit:g}")
            print("\n" + text, flush=True)

    def finish(self, modules: list[str], status: int, seconds: float) -> None:
        try:
            payload = json.loads(self.buffer.decode())
        except ValueError:
            code = os.waitstatus_to_exitcode(status)
            text = _(
                "watch: grading {modules} ended without a result (exit status {code}): did "
                "your code call os._exit or crash the interpreter?"
            ).format(modules=", ".join(modules), code=code)
            print("\n" + text, flush=True)
            return
        graded = [Result(**{**r, "status": Status(r["status"])}) for r in payload["results"]]
        for m in modules:
            self.results[m] = [r for r in graded if r.module == m]
        # results.json and report.html: merged with every module graded earlier (sinks.py)
        result_set = sinks.ResultSet(
            str(self.folder),
            graded,
            title=f"Attention Lab: {self.folder.name}",
            folder=self.folder,
            left_out=slow_checks(modules),
            sections=payload["sections"],
            graded_at=payload["graded_at"],
        )
        merged = sinks.MergedResults(self.results_path)
        sinks.publish(
            result_set,
            [
                sinks.HintState(self.folder, record=False, state=self.settings.hint_state),
                merged,
            ],
        )
        published = merged.published
        assert published is not None
        if published.report is None:  # the report never stops the watcher
            error = published.report_error
            print(_("watch: report not written ({error})").format(error=error), flush=True)
        text = _(
            "graded in {seconds} s; report: {report}. Watching {folder} for changes "
            "(Ctrl-C to stop)."
        ).format(seconds=f"{seconds:.1f}", report=self.report_path, folder=self.folder)
        print(text, flush=True)

    def to_grade(self, changed: list[str]) -> list[str]:
        """The watched modules to grade again after `changed` were saved: those, and the
        ones that run a changed file as their own dependency (the student copy has no
        stand-in for it), whose grades (and WAIT checks, waiting.py) depend on it."""
        submission = Submission(self.folder)
        return [
            m
            for m in self.modules
            if m in changed or set(waiting.closure(submission, m)) & set(changed)
        ]

    def run(self) -> int:
        seen = self.mtimes()
        text = _(
            "Attention Lab watch: grading {modules} in {folder}, then again each time you "
            "save a module (Ctrl-C to stop)."
        ).format(modules=", ".join(self.modules), folder=self.folder)
        print(text, flush=True)
        self.start(self.modules)
        while True:
            self.poll_child(POLL)
            now = self.mtimes()
            saved = [m for m in now if now[m] != seen[m]]
            seen = now
            changed = self.to_grade(saved) if saved else []
            if changed:
                if self.child is not None:  # stop it, and grade its modules again too
                    changed = [m for m in self.modules if m in changed or m in self.child[3]]
                stamp = time.strftime("%H:%M:%S")
                files = ", ".join(m + ".py" for m in saved)
                text = _("[{time}] {files} changed").format(time=stamp, files=files)
                print("\n" + text, flush=True)
                self.start(changed)


def watch(settings: Settings, modules: Sequence[str] = (), hard_limit: float = 120.0) -> int:
    """`make watch`: watch settings.submission's `modules` (default: all) until Ctrl-C."""
    # Ctrl-C is the only way out: Python's handler even where the watcher inherited SIGINT
    # ignored (a command a script runs in the background does; it then never stopped)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    watcher = Watcher(settings, modules, hard_limit)
    try:
        return watcher.run()
    except KeyboardInterrupt:
        watcher.stop_child()
        watcher.kill_late(wait=GRACE)
        print("\n" + _("watch: stopped."), flush=True)
        return 0
    finally:
        watcher.server.close()
