"""`make watch [EX=m]`: re-grade a module as soon as its file is saved.

The watcher is one long-lived process that pays for importing torch, the checks, the trusted
stand-ins and the reference outputs once. It polls the modification times of the
submission's module files (every POLL seconds: no file-watching dependency, and it works on
every file system). When a file changes, a forked child grades that module from the warm
state, prints the table, and sends its results and its section of the HTML report back on a
pipe; the parent merges them into build/results.json and build/report.html as `make grade
EX=m` does (sinks.py, publish.py: every module graded so far, at its latest).

Student code runs only in the child, so nothing it does reaches the watcher: a syntax error
or an exception is a failed check as in `make grade`; a check that runs past its CPU limit
is stopped from outside as in `make grade` (worker.py), and the later checks that would run
the function that did not finish are marked "timed out", same as above, without running
(policy.Stuck); and a child that still does not finish (a loop inside one long C call, os._exit,
a crash of the interpreter) is killed at a hard deadline. Saving again while a module is
being graded stops that grading and starts over with the new file. Ctrl-C ends the watcher
and its child cleanly.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ..core import registry
from ..core.check import Check, Outputs, Result, Status
from ..core.dispatch import OpCounter
from ..core.errors import UsageError
from ..core.i18n import _
from ..core.references import References
from ..feedback import sinks
from ..run import engine, limits, waiting
from ..run.limits import TimeLimits
from ..run.submission import Submission, trusted_modules
from .options import modules_of

POLL = 0.2  # seconds between two looks at the files' modification times
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


def _child(write_fd: int, submission_path: str, modules: list[str], args, refs_by_module, known=()):
    """The forked child: grade, print the table, send results and report sections, exit.
    `known`: the other watched modules' last results (what an own dependency's decide)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    status = 0
    budget = refs_by_module.time_limits(args.settings.cpu_limit)
    try:
        submission = Submission(submission_path)
        results: list[Result] = []
        outputs: dict[str, Outputs] = {}
        for module in modules:
            results += grade_module(
                submission, module, refs_by_module, device=args.device, outputs=outputs, time=budget
            )

        def quietly(more: list[str]) -> list[Result]:
            return [
                r
                for m in more
                for r in grade_module(
                    submission, m, refs_by_module, device=args.device, outputs={}, time=budget
                )
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
                sinks.HintState(submission.path, state=args.settings.hint_state),
                sinks.Table(),
                sinks.ReportSections(submission, refs_by_module, outputs),
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
    except BaseException as e:  # never let the child return into the parent's loop
        stopped = _("watch: grading stopped: {error}").format(error=f"{type(e).__name__}: {e}")
        print(stopped, file=sys.stderr, flush=True)
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


# --------------------------------------------------------------------------- the parent


def _warm_up() -> None:
    """Pay torch's lazy start-up costs (the dispatcher, CPU kernels, autograd) once, here,
    instead of in every child. One thread: the children are forked from this process, and a
    thread pool started before a fork is not safe to use in the child (the sandbox's children
    use one thread too)."""
    torch.set_num_threads(1)
    x = torch.randn(2, 3, 4, requires_grad=True)
    with OpCounter():
        y = torch.softmax(x @ x.transpose(-2, -1) / 2.0, dim=-1)
    y = y.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), 0.0)
    y = F.scaled_dot_product_attention(x, x, y @ x, attn_mask=torch.zeros(3, 3))
    F.layer_norm(F.gelu(torch.nn.Linear(4, 4)(y)), (4,)).sum().backward()
    optimizer = torch.optim.Adam([x], lr=0.1)
    optimizer.step()
    optimizer.zero_grad()
    torch.testing.assert_close(x, x)
    limits.warm_up("matplotlib")  # fonts, text layout: plots.py's first figure


class Watcher:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.folder = Path(args.submission).resolve()
        self.modules = args.modules or registry.modules()
        self.results_path = Path(args.results)
        self.report_path = self.results_path.parent / "report.html"
        # Warm everything a child needs, so a fork starts graded work at once.
        for name in trusted_modules():
            importlib.import_module(f"autograder.trusted.{name}")
        self.refs = References.public()
        for m in self.modules:  # load (and check) the fixtures once, before any fork
            self.refs.module(m)
        _warm_up()
        # {module: its latest results}: what a later grading's waits are decided from
        self.results: dict[str, list[Result]] = {}
        self.child: tuple[int, int, float, list[str]] | None = None  # pid, fd, start, modules
        self.buffer = b""

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
        self.stop_child()
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_fd)
            known = [r for rs in self.results.values() for r in rs]
            _child(write_fd, str(self.folder), modules, self.args, self.refs, known)
        os.close(write_fd)
        self.child, self.buffer = (pid, read_fd, time.monotonic(), modules), b""

    def stop_child(self) -> None:
        if self.child is None:
            return
        pid, fd = self.child[:2]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(fd)
        self.child = None

    def poll_child(self, timeout: float) -> None:
        """Read what the child sends; when it is done, record its results."""
        if self.child is None:
            time.sleep(timeout)
            return
        pid, fd, started, modules = self.child
        ready = select.select([fd], [], [], timeout)[0]
        if ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                self.buffer += chunk
                return
            os.close(fd)
            status = os.waitpid(pid, 0)[1]
            self.child = None
            self.finish(modules, status, time.monotonic() - started)
        elif time.monotonic() - started > self.args.hard_limit:
            self.stop_child()
            text = _(
                "watch: grading {modules} did not finish within {seconds} s and was stopped "
                "(an endless loop?). Fix it and save again."
            ).format(modules=", ".join(modules), seconds=f"{self.args.hard_limit:g}")
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
                sinks.HintState(self.folder, record=False, state=self.args.settings.hint_state),
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


def cmd_watch(args) -> int:
    folder = Path(args.submission)
    if not folder.is_dir():
        raise UsageError(f"SUBMISSION={args.submission!r} is not a folder")
    wanted = modules_of(args.ex)
    if args.device != "cpu":
        raise UsageError("make watch grades on the CPU only (DEVICE=cpu)")
    args.modules = wanted
    watcher = Watcher(args)
    try:
        return watcher.run()
    except KeyboardInterrupt:
        watcher.stop_child()
        print("\n" + _("watch: stopped."), flush=True)
        return 0
