"""Grade one submission in the sandbox: probes in a confined fork, verdicts here.

`Sandbox` holds what every submission of a run shares: the isolation this machine allows,
the zygote, the tier (hidden: a seed drawn now, reference outputs computed from solutions/
in a trusted fork of the zygote, reference_fork.py; public: the stored fixtures) and the
resource limits. `Sandbox.grade(folder)` returns the Results of every check plus plain
notes on anything unusual (a crash of the whole process, a timeout, megabytes of output,
an early exit). A check that overruns its
CPU seconds (the run's limits.TimeLimits, as in every channel) is stopped from outside by
the monitor (relay.py) and costs that check only: the remaining checks run in a fresh
sandboxed process, within the submission's budget (wall-clock seconds less the time its
processes waited for a CPU: _charged, relay.follow).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import secrets
import selectors
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core import fixtures, registry, seeds
from ...core.check import (
    GRADER_ERROR,
    TIMEOUT,
    Check,
    Failure,
    Misconceptions,
    Outputs,
    Result,
    Totals,
)
from ...core.i18n import withhold_reference
from ...core.paths import ROOT
from ...core.references import References
from .. import measure, policy
from ..channel import Reading, stray_note
from ..engine import verdict
from ..limits import TimeLimits, slots_of
from ..policy import EXITED as EXITED_EARLY
from ..policy import Stuck, channel_broken, overran, stalled
from ..probing import make_inputs, one_torch_thread
from . import relay, view, wire
from .jail import Isolation, Limits, UidPool, detect, release
from .zygote import Zygote

# Never visible to student code: the solutions and everything derived from them by hand.
SECRET = ("solutions", "tests", "course", ".git", "build")
MAX_CHANNEL = 64 << 20

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

KILLED = misconception(
    "killed",
    "The grading process was killed ({how}) while this check ran{why}.",
    (
        "The process that ran your code used more memory or more processes than a "
        "submission may, and the system stopped it.",
        "Estimate the size of each tensor you create: (T, T) is fine, (T, T, T) or a list "
        "that grows in a loop is not; do not start processes or threads.",
        "Look for tensors or lists far larger than the inputs, or processes your code starts.",
    ),
)
NOT_RUN = misconception(
    "not-run",
    "This check did not run: {reason}.",
    (
        "An earlier problem (an import error, a crash of the whole process) stopped the "
        "grading before this check's turn.",
        "Read the first failing check above: its message says what stopped the rest.",
        "Fix the problem reported above; then every check runs.",
    ),
)
_SIGNALS = {
    signal.SIGKILL: ("SIGKILL", ", probably for using too much memory"),
    signal.SIGXCPU: ("SIGXCPU", ": it used up its CPU time"),
    signal.SIGXFSZ: ("SIGXFSZ", ": it wrote a file larger than the limit"),
    signal.SIGSEGV: ("SIGSEGV", ": a segmentation fault"),
}


@dataclass
class Graded(Totals):
    """One submission's outcome."""

    name: str
    results: list[Result]
    notes: list[str] = field(default_factory=list)
    output: str = ""  # what the student's code printed (an excerpt)
    output_bytes: int = 0
    process: dict[str, Any] = field(default_factory=dict)  # how the sandboxed process ended
    not_graded: str = ""  # why this submission could not be graded at all ('' if it was)


def copy_submission(source: Path, target: Path) -> list[str]:
    """Copy the regular files of a submission folder (seeds.handed_in: no links, no hidden
    folders, size-capped, what attempt_id digests); the notes say what was left out."""
    notes: list[str] = []
    target.mkdir(parents=True, exist_ok=True)
    for path in seeds.handed_in(source, notes):
        copy = target / path.relative_to(source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return notes


def _chown_tree(path: Path, uid: int) -> None:
    for dirpath, _dirs, files in os.walk(path):
        os.chown(dirpath, uid, uid)
        for name in files:
            os.chown(os.path.join(dirpath, name), uid, uid)


class _Arriving:
    """One submission's own hidden-tier references (grade(seed=...)), computed module by
    module in a reference server (Zygote.references: a trusted fork of the zygote, never the
    sandboxed process) on a thread of their own while the submission's sandboxes run. The
    sandbox of a module waits for that module's references only (its time limits are
    calibrated on them; its verdicts compare with them): the first module's sandbox starts
    after one module's references, not all of them, and the server computes the next
    modules' meanwhile; that with one slot only (Gradescope, nbgrader autograde: one submission at
    a time), a Sandbox of several slots (batch) waits for all of them first (grade()). Each
    module is one request, so each starts from the server's initial random state, as each
    module's sandboxed process starts from the zygote's."""

    def __init__(self, sandbox: Sandbox, seed: int):
        self.seed = seed
        self.refs = References.hidden(seed, compute=sandbox.zygote.references)
        self.references: dict[str, dict[str, Outputs]] = {}
        self.errors: dict[str, str] = {}
        self.ready = {m: threading.Event() for m in sandbox.modules}
        self.thread = threading.Thread(target=self._compute, args=(sandbox.modules,), daemon=True)
        self.thread.start()

    def _compute(self, modules: list[str]) -> None:
        for module in modules:
            try:
                found, errors = self.refs.modules([module])
                self.references.update(found)
                self.errors.update(errors)
            except Exception as e:  # a grader error costs this module's checks only
                self.errors[module] = f"{type(e).__name__}: {str(e)[:200]}"
            finally:
                self.ready[module].set()

    def wait(self, modules: Iterable[str]) -> None:
        """Wait until the references of `modules` are in."""
        for module in modules:
            if module in self.ready:
                self.ready[module].wait()

    def state(
        self,
    ) -> tuple[int, dict[str, dict[str, Outputs]], dict[str, str], dict[str, float]]:
        return self.seed, self.references, self.errors, self.refs.cpu


class Sandbox:
    def __init__(
        self,
        modules: list[str] | None = None,
        *,
        seed: int | None = None,
        public: bool = False,
        limits: Limits | None = None,
        hide: Iterable[Path] = (),
        slots: int = 1,
        warm_up: bool = True,
        insecure: bool = False,
        need_cgroups: bool = True,
        per_student: bool = False,
        slow: bool = False,
        zygote: Zygote | None = None,
        sandbox_mode: str = "",
        time_limits: TimeLimits | None = None,
    ):
        """Raises jail.SandboxUnavailable (saying what is missing) when this machine cannot
        confine student code, unless `insecure`. `need_cgroups`: several submissions share
        the machine (batch); Gradescope grades one per container. `per_student`: every
        grade() call brings its submission's own hidden seed (no run-wide references).
        `slow`: grade the slow checks too (gpt's training run: nbgrader's training cell).
        `zygote`: one the caller started early (before importing torch itself); the Sandbox
        owns it from here on, and closes it. `sandbox_mode`: Settings.sandbox_mode ("uid":
        as if this machine had no namespaces). `time_limits`: the run's time limits
        (limits.TimeLimits.of its settings, as in every channel; calibrated here on each
        submission's references)."""
        self.modules = list(modules or registry.modules())
        self.limits = limits or Limits()
        self.time = time_limits or TimeLimits()
        self.stall = self.time.stall  # wall-clock seconds without CPU use: a blocked process
        self.uids: UidPool | None = None
        try:
            self.isolation: Isolation = detect(
                [ROOT / s for s in SECRET] + list(hide),
                need_cgroups=need_cgroups,
                insecure=insecure,
                mode=sandbox_mode,
            )
            if self.isolation.uses_uid:
                self.uids = UidPool(slots)
            # The zygote is started before any reference output exists in this process.
            self.zygote = zygote or Zygote(
                warm_up=warm_up,
                servers=0 if public else slots,
                kinds=registry.warm_ups(self.modules, slow),  # what these modules' probes use
            )
        except BaseException:
            if zygote is not None:
                zygote.close(kill=True)
            self._release()
            raise
        self.public = public
        self.seed = fixtures.PUBLIC_SEED if public else seed or secrets.randbelow(2**31 - 1) + 1
        # The one References API (public fixtures, or the hidden tier computed in a trusted
        # fork of the zygote); the dict keeps what each module's verdicts compare with.
        self.per_student = per_student and not public
        self.references, self.reference_errors, self.reference_cpu = (
            ({}, {}, {}) if self.per_student else self._compute(self.seed)
        )
        self._own = threading.local()  # a per-student seed's references (grade(seed=...))
        # Slow checks (training runs, `make grade-train`) are left out of batch grading.
        self.checks: list[Check] = [
            c for m in self.modules for c in registry.checks_of(m) if slow or not c.slow
        ]
        self.stage = Path(tempfile.mkdtemp(prefix="attention-lab-sandbox-"))
        self.stage.chmod(0o711)
        # One sandboxed process per module, each a fresh fork of the zygote (which never runs
        # student code): nothing one module's code does to its process (a patched nn.Linear,
        # a kit class's method, an audit hook, a thread) reaches another module's checks. A
        # state check inside the process could be forged by the code it checks (issue 27).
        # Each module's view of the kit (view.py), staged once for the whole run.
        self.groups: list[tuple[str, ...]] = [(m,) for m in self.modules]
        self.views = view.stage(self.stage / "views", self.groups)
        self.slots: queue.Queue[int] = queue.Queue()
        self.slot_count = slots
        for slot in range(slots):
            self.slots.put(slot)
        self.count = itertools.count()

    def _compute(
        self, seed: int
    ) -> tuple[dict[str, dict[str, Outputs]], dict[str, str], dict[str, float]]:
        """{module: what its verdicts compare with}, {module: why it could not be had},
        {check id: the reference's CPU seconds} (what time limits are calibrated on).
        Public tier: the stored fixtures. Hidden tier: computed from solutions/ on `seed` in
        a trusted fork of the zygote (Zygote.references), where torch is warm, so that
        several submissions' references are computed at once, beside their sandboxes,
        and this process stays free for verdicts."""
        if self.public:
            refs = References.public()
        else:
            refs = References.hidden(seed, compute=self.zygote.references)
        found, errors = refs.modules(self.modules)
        return found, errors, refs.cpu

    def _state(
        self,
    ) -> tuple[int, dict[str, dict[str, Outputs]], dict[str, str], dict[str, float]]:
        """(seed, references, reference errors, reference CPU seconds) of the submission
        this thread grades."""
        own: _Arriving | None = getattr(self._own, "state", None)
        if own is not None:
            return own.state()
        return self.seed, self.references, self.reference_errors, self.reference_cpu

    def _wait_references(self, modules: Iterable[str]) -> None:
        """Wait for the references of `modules` of the submission this thread grades (its
        own seed's, computed as it is graded: _Arriving)."""
        own: _Arriving | None = getattr(self._own, "state", None)
        if own is not None:
            own.wait(modules)

    def _release(self) -> None:
        release(self.uids, getattr(self, "isolation", None))

    def close(self) -> None:
        """Stop the zygote, kill whatever runs under this run's uids, remove its cgroups and
        files. Gradescope writes results.json only after this."""
        self.zygote.close()
        view.unstage(self.stage)
        self._release()

    def __enter__(self) -> Sandbox:
        # This process only judges (small tensors) while the sandboxed processes run the
        # student's code: on one torch thread, so that no idle intra-op thread spins on a
        # core they need (probing.one_torch_thread), in every channel that grades here.
        self._threads = one_torch_thread()
        self._threads.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.close()
        finally:
            self._threads.__exit__(None, None, None)

    # ------------------------------------------------------------------ one submission

    def cpu_limit(self, check: Check) -> float:
        """CPU seconds `check` may use: as in every channel (the run's TimeLimits, calibrated
        on the references of the submission this thread grades)."""
        return policy.cpu_limit(check, replace(self.time, reference=self._state()[3]))

    def grade(self, folder: Path, name: str | None = None, seed: int | None = None) -> Graded:
        """Grade one submission; `seed`: its own hidden-tier seed (seeds.student_seed), whose
        references are computed here first (default: the run's seed)."""
        if seed is None and self.per_student:
            raise ValueError("this sandbox grades each submission on its own seed: pass seed=")
        arriving = None
        if seed is not None:
            if self.public:
                raise ValueError("a per-student seed is for the hidden tier only")
            # computed beside the submission's sandboxes, each module's before its sandbox
            arriving = self._own.state = _Arriving(self, seed)
            if self.slot_count > 1:
                # Several submissions at once (batch): the other slots keep the cores busy
                # while this one's references are computed, so overlapping them with its own
                # sandboxes gains nothing (it only makes them wait for a CPU, which its
                # budget leaves out: _charged). All of them first, as before.
                arriving.wait(self.modules)
        slot = self.slots.get()
        try:
            return self._grade(Path(folder), name or Path(folder).name, slot)
        finally:
            self.slots.put(slot)
            if arriving is not None:  # (a submission not graded leaves its server busy)
                arriving.thread.join()
            self._own.state = None

    def _grade(self, folder: Path, name: str, slot: int) -> Graded:
        """One sandboxed process per module, seeing that module's view of the kit; they share
        the submission's time budget (limits.timeout: the seconds its sandboxed processes ran
        or blocked, _charged; not the time they waited for a CPU, nor the grader's own time,
        waiting for its references or judging). Checks a process did not reach (its code
        crashed it) are graded in a fresh one, by the one crash and timeout policy."""
        graded = Graded(name, [])
        left = self.limits.timeout
        for group in self.groups:
            todo = [m for m in group if any(c.module == m for c in self.checks)]
            self._wait_references(todo)  # the grader's time, not the submission's
            while todo:
                checks = [c for c in self.checks if c.module in todo]
                if left < 0.5:  # an earlier module used up the submission's time
                    spent = f"the submission used up its {self.limits.timeout:g} s before"
                    graded.results += [
                        Result.of(c, "failed", Failure(NOT_RUN, reason=f"{spent} {c.module}"))
                        for c in checks
                    ]
                    break
                part, reached, left = self._grade_module(
                    folder, name, slot, group, todo, checks, left
                )
                if part.not_graded:
                    return part
                if not reached:  # nothing ran at all: a fresh process would not do better
                    reached = set(todo)
                graded.results += [r for r in part.results if r.module in reached]
                graded.notes += [n for n in part.notes if n not in graded.notes]
                graded.output_bytes += part.output_bytes
                if part.output:
                    graded.output += (
                        part.output
                        if graded.output.endswith("\n") or not graded.output
                        else "\n" + part.output
                    )
                for module in reached:
                    graded.process.setdefault("modules", {})[module] = part.process
                todo = [m for m in todo if m not in reached]
        order = {c.id: i for i, c in enumerate(self.checks)}
        graded.results.sort(key=lambda r: order.get(r.check_id, len(order)))
        if graded.output_bytes > self.limits.output:
            graded.notes.append(
                f"Your code printed {graded.output_bytes:,} bytes; the feedback keeps the first "
                f"and last {self.limits.output // 2:,} of each process's."
            )
        return graded

    def _grade_module(
        self,
        folder: Path,
        name: str,
        slot: int,
        group: tuple[str, ...],
        modules: list[str],
        checks: list[Check],
        left: float,
    ) -> tuple[Graded, set[str], float]:
        """`checks` (of `modules`, some or all of `group`) in one sandboxed process with the
        group's view: (what it gave, the modules it reached: a check of theirs started, what
        is left of the submission's budget `left`)."""
        uid = self.uids.uids[slot] if self.uids else None
        work = Path(tempfile.mkdtemp(dir=self.stage))
        work.chmod(0o711)
        try:
            notes = copy_submission(folder, work / "submission")
            (work / "scratch").mkdir()
            (work / "root").mkdir()
            if uid is not None:
                _chown_tree(work / "submission", uid)
                _chown_tree(work / "scratch", uid)
            inside = self.isolation.namespaces
            request = {
                "submission": "/submission" if inside else str(work / "submission"),
                "submission_source": str(work / "submission"),
                "scratch": str(work / "scratch"),
                "root": str(work / "root"),
                "kit": self.views[group],
                "modules": modules,
                "uid": uid,
                "stall": self.stall,
                "isolation": asdict(self.isolation),
            }
            stuck = Stuck()
            skipped: dict[str, Result] = {}
            plain = [c for c in checks if not c.measured]
            started = time.monotonic()
            runs, output = self._runs(request, slot, plain, left, stuck, skipped)
            # Each part of a measured check in a fresh process of its own, measured by the
            # monitor (run/measure.py), within what is left of the budget.
            left -= _charged(time.monotonic() - started, sum(_waited(s) for _, s in runs))
            measured = {}
            for check in checks:
                if check.measured:
                    measured[check.id], left = self._measure(request, slot, check, left, output)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for _, status in runs:
            if status.get("setup_error"):  # fail closed: no student code ran
                reason = wire.text(status["setup_error"], 300)
                failed = Graded(name, [], notes=[f"not graded: {reason}"], not_graded=reason)
                return failed, set(), left
            if "exit_code" not in status:  # the trusted monitor failed: not the student's doing
                error = wire.text(status.get("monitor_error"), 1500) or "no report"
                print(f"sandbox monitor failed grading {name}:\n{error}", file=sys.stderr)
                last = error.strip().splitlines()[-1]
                reason = f"grader error (the sandbox monitor failed: {last})"
                failed = Graded(name, [], notes=[f"not graded: {reason}"], not_graded=reason)
                return failed, set(), left
        graded, reached = self._judge(name, runs, plain, stuck, skipped)
        for check in checks:
            if check.measured:
                graded.results.append(self._verdict(check, measured[check.id]))
                reached.add(check.module)
        graded.notes[:0] = notes
        graded.output_bytes = output["total"]
        graded.output = _excerpt(output, self.limits.output)
        return graded, reached, left

    def _runs(
        self,
        request: dict[str, Any],
        slot: int,
        checks: list[Check],
        left: float,
        stuck: Stuck,
        skipped: dict[str, Result],
    ) -> tuple[list[tuple[bytes, dict[str, Any]]], dict[str, Any]]:
        """Sandboxed runs of `checks`, [(channel bytes, the monitor's report)], and what
        they printed. After a check stopped for its CPU seconds, the checks without an
        outcome run again in a fresh process, except those that would run what did not
        finish (`stuck`: an endless loop costs one limit per function): they land in
        `skipped`, timed out "same as above"; the submission's budget `left` is for all runs."""
        output: dict[str, Any] = {"head": bytearray(), "tail": bytearray(), "total": 0}
        runs: list[tuple[bytes, dict[str, Any]]] = []
        todo = list(checks)
        request["guards"] = {}
        while todo:
            request.update(
                name=f"sandbox-{slot}-{next(self.count)}",
                checks=[c.id for c in todo],
                specs=[c.spec() for c in todo],
                # Each check's own seed, never the submission's: nothing in a process that
                # imports student code holds the hidden seed (it would draw every input).
                seeds={c.id: c.seed(self._state()[0]) for c in todo},
                cpu_limits={c.id: self.cpu_limit(c) for c in todo},
                limits=asdict(replace(self.limits, timeout=left)),
            )
            started = time.monotonic()
            channel, status = self._collect(*self.zygote.start(request), output, left)
            left -= _charged(time.monotonic() - started, _waited(status))
            runs.append((channel, status))
            stop = status.get("stopped")
            if not isinstance(stop, dict) or stop.get("why") != "cpu":
                break
            reading = _read(channel, todo)
            finished = {stop.get("check")} | reading.finished()
            stopped = next((c for c in todo if c.id == stop.get("check")), None)
            if stopped is not None:  # charged to the call that did not return (policy.charged)
                stuck.timed_out(
                    stopped,
                    imported=stopped.id in reading.loaded,
                    board=stop.get("board"),
                    slots=slots_of(todo),
                    limit=self.cpu_limit(stopped),
                )
            for check in todo:
                same = None if check.id in finished else stuck.same(check)
                if same is not None:
                    skipped[check.id] = same
            todo = [c for c in todo if c.id not in finished and c.id not in skipped]
            request["guards"] = {m: stuck.guards(m) for m in dict.fromkeys(c.module for c in todo)}
            if todo and left <= 0:  # the budget is spent: the rest count as timed out
                runs.append((b"", {"timed_out": True, "exit_code": None, "signal": None}))
                break
        return runs, output

    def _measure(
        self, request: dict[str, Any], slot: int, check: Check, left: float, output: dict[str, Any]
    ) -> tuple[Result | dict[str, Any], float]:
        """The parts of a measured check, each in a fresh sandboxed process whose monitor
        measures it: (the check's outcome, measure.merge; the submission's budget left)."""
        parts: list[tuple[Result | dict[str, Any], dict[str, float] | None]] = []
        for part in check.parts():
            if left < 0.5:
                spent = f"the submission used up its {self.limits.timeout:g} s before"
                parts.append((Result.of(part, "failed", Failure(NOT_RUN, reason=spent)), None))
                break
            request.update(
                name=f"sandbox-{slot}-{next(self.count)}",
                checks=[part.id],
                specs=[part.spec()],
                seeds={part.id: part.seed(self._state()[0])},
                cpu_limits={part.id: self.cpu_limit(part)},
                limits=asdict(replace(self.limits, timeout=left)),
                guards={},
                measure=True,
            )
            started = time.monotonic()
            channel, status = self._collect(*self.zygote.start(request), output, left)
            left -= _charged(time.monotonic() - started, _waited(status))
            parts.append((self._part_outcome(part, channel, status), _measures(status)))
        request.pop("measure", None)
        return measure.merge(check, parts), left

    def _part_outcome(
        self, part: Check, channel: bytes, status: dict[str, Any]
    ) -> Result | dict[str, Any]:
        """One part's outcome, by the one policy: outputs, or the Result of how it ended."""
        if status.get("setup_error") or "exit_code" not in status:
            why = wire.text(status.get("setup_error") or status.get("monitor_error"), 300)
            error = f"the sandbox could not run this check ({why or 'no report'})"
            return Result.of(part, "error", Failure(GRADER_ERROR, error=error))
        stop = status.get("stopped")
        if isinstance(stop, dict) and stop.get("check") == part.id:
            why = "cpu" if stop.get("why") == "cpu" else "stall"
            return overran(part, why, self.cpu_limit(part) if why == "cpu" else self.stall)
        messages, broken = wire.parse(channel)
        reading = Reading({part.id})
        for header, blob in messages:
            reading.take(header, blob)
        found = self._outcome(part, reading, Stuck())
        if found is not None:
            return found
        if broken:
            return channel_broken(part, broken)
        ended = _how_it_ended(status, self.limits, reading.done)
        if ended:
            return Result.of(part, ended[0], ended[1])
        return Result.of(part, "failed", Failure(NOT_RUN, reason="the process stopped early"))

    def _collect(
        self,
        channel_fd: int,
        output_fd: int,
        status_fd: int,
        output: dict[str, Any],
        timeout: float,
    ) -> tuple[bytes, dict[str, Any]]:
        """Read the three pipes until the monitor reports (then drain briefly); what the
        process printed is added to `output`."""
        channel = bytearray()
        status = bytearray()
        keep = self.limits.output // 2
        sel = selectors.DefaultSelector()
        for fd, what in ((channel_fd, "channel"), (output_fd, "output"), (status_fd, "status")):
            sel.register(fd, selectors.EVENT_READ, what)
        deadline = time.monotonic() + timeout * relay.WALL_BACKSTOP + 30
        status_done_at = None
        try:
            while sel.get_map():
                now = time.monotonic()
                if now > deadline or (status_done_at and now > status_done_at + 2):
                    break
                for key, _ in sel.select(timeout=0.5):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        sel.unregister(key.fd)
                        if key.data == "status":
                            status_done_at = time.monotonic()
                        continue
                    if key.data == "channel":
                        channel += data
                        if len(channel) > MAX_CHANNEL:
                            sel.unregister(key.fd)
                            os.close(key.fd)
                            channel_fd = -1
                    elif key.data == "output":
                        output["total"] += len(data)
                        room = keep - len(output["head"])
                        if room > 0:
                            output["head"] += data[:room]
                            data = data[room:]
                        output["tail"] = (output["tail"] + data)[-keep:]
                    else:
                        status += data[: 1 << 12]
        finally:
            sel.close()
            for fd in (channel_fd, output_fd, status_fd):
                if fd >= 0:
                    os.close(fd)
        try:
            process = json.loads(status) if status else {}
        except ValueError:
            process = {}
        return bytes(channel), process if isinstance(process, dict) else {}

    # ------------------------------------------------------------------ verdicts (trusted)

    def _judge(
        self,
        name: str,
        runs: list[tuple[bytes, dict[str, Any]]],
        checks: list[Check],
        stuck: Stuck | None = None,
        skipped: dict[str, Result] | None = None,
    ) -> tuple[Graded, set[str]]:
        """Verdicts on what the sandbox sent, and the modules it reached (a check of theirs
        started or has an outcome, or the monitor stopped one). Every byte of it is hostile: a
        message that is malformed costs the check it names (or, naming none, adds a note),
        nothing more. A message can only make a module reached, which costs its student a
        fresh process for it (where the checks without an outcome run again), nothing more."""
        ids = {c.id for c in checks}
        stopped: dict[str, Result] = {}  # checks the monitor stopped (trusted)
        stuck, skipped = stuck or Stuck(), skipped or {}
        done, broken = False, ""
        damaged: list[str] = []
        stray: list[str] = []
        outcome: dict[str, Result | dict[str, Any] | None] = {}
        started: list[str] = []
        for data, process in runs:  # the last run's `done` and `broken` decide the rest
            reading = Reading(ids)
            messages, broken = wire.parse(data)
            damaged += [broken] if broken else []
            for header, blob in messages:
                reading.take(header, blob)
            done, stray = reading.done, stray + reading.stray
            started += reading.started
            for check in checks:  # a check has its outcome in one run at most
                if check.id not in outcome or outcome[check.id] is None:
                    outcome[check.id] = self._outcome(check, reading, stuck)
            stop = process.get("stopped")
            if isinstance(stop, dict) and stop.get("check") in ids:
                check = next(c for c in checks if c.id == stop["check"])
                why = "cpu" if stop.get("why") == "cpu" else "stall"
                seconds = self.cpu_limit(check) if why == "cpu" else self.stall
                stopped[check.id] = overran(check, why, seconds)
        process = runs[-1][1] if runs else {}
        graded = Graded(name, [], process=process)
        stall = next((r for r in stopped.values() if r.misconception != TIMEOUT.id), None)
        module_of = {c.id: c.module for c in checks}
        answered = [i for i, found in outcome.items() if found is not None]
        reached = {module_of[i] for i in [*started, *answered, *stopped]}
        ended = None if process.get("stopped") else _how_it_ended(process, self.limits, done)
        if ended:
            graded.notes.append(ended[2])
        for note in damaged:
            graded.notes.append(f"The grader's channel was damaged: {note}.")
        if stray:
            graded.notes.append(stray_note(stray))
        reference_errors = self._state()[2]
        for check in checks:
            if check.module in reference_errors:
                error = reference_errors[check.module]
                graded.results.append(Result.of(check, "error", Failure(GRADER_ERROR, error=error)))
            elif check.id in stopped:
                graded.results.append(stopped[check.id])
            elif check.id in skipped:
                graded.results.append(skipped[check.id])
            elif (settled := outcome.get(check.id)) is not None:
                graded.results.append(self._verdict(check, settled))
            elif broken:
                graded.results.append(channel_broken(check, broken))
            elif check.id in started and ended:
                graded.results.append(Result.of(check, ended[0], ended[1]))
            elif stall is not None and stall.module == check.module:
                # a blocked process blocks again: as in local grading
                graded.results.append(stalled(check, self.stall))
            else:
                reason = ended[2].rstrip(".") if ended else "the grading process stopped early"
                failure = Failure(NOT_RUN, reason=reason[0].lower() + reason[1:])
                graded.results.append(Result.of(check, "failed", failure))
        return graded, reached

    def _outcome(
        self, check: Check, reading: Reading, stuck: Stuck
    ) -> Result | dict[str, Any] | None:
        """policy.outcome; a failure of the grader's own reading (a grader bug on an odd
        value) costs this check only."""
        try:
            return policy.outcome(check, reading, stuck)
        except Exception as e:
            error = f"{type(e).__name__}: {str(e)[:200]}"
            return Result.of(check, "error", Failure(GRADER_ERROR, error=error))

    def _verdict(self, check: Check, outcome: Result | dict[str, Any]) -> Result:
        """engine.verdict, the one judge of every placement; a failure of the grader itself
        (a reference that is missing, a grader bug on an odd value) costs this check only."""
        if isinstance(outcome, Result):
            return outcome
        try:
            seed, references, _errors, _cpu = self._state()
            reference = references[check.module].get(check.slug)
            result = verdict(check, outcome, reference, make_inputs(check, seed))
            # Hidden inputs: the mistake named, the student's own values shown, never the
            # reference's (a resubmission could collect them).
            return result if self.public else withhold_reference(result)
        except Exception as e:
            error = f"{type(e).__name__}: {str(e)[:200]}"
            return Result.of(check, "error", Failure(GRADER_ERROR, error=error))


def _measures(status: dict[str, Any]) -> dict[str, float] | None:
    """What the monitor measured of a part's process (its report: trusted), as floats."""
    found = status.get("measured")
    if not isinstance(found, dict):
        return None
    try:
        return {str(k): float(found[k]) for k in ("peak_bytes", "cpu_seconds")}
    except (KeyError, TypeError, ValueError):
        return None


def _waited(status: dict[str, Any]) -> float:
    """The seconds a sandboxed process waited for a CPU, as its monitor counted them
    (relay.follow; the trusted side), or 0."""
    waited = status.get("waited")
    if not isinstance(waited, (int, float)) or isinstance(waited, bool) or not waited >= 0:
        return 0.0
    return float(waited)


def _charged(elapsed: float, waited: float) -> float:
    """What sandboxed runs cost the submission's budget: their wall-clock seconds less the
    time their processes waited for a CPU, so a loaded machine costs no one a point."""
    return max(0.0, elapsed - min(waited, elapsed))


def _read(data: bytes, checks: list[Check]) -> Reading:
    """What one run's channel said (channel.Reading)."""
    reading = Reading({c.id for c in checks})
    for header, blob in wire.parse(data)[0]:
        reading.take(header, blob)
    return reading


def _how_it_ended(
    process: dict[str, Any], limits: Limits, done: bool
) -> tuple[str, Failure, str] | None:
    """(status, Failure for the check that was running, a note) or None if it ended well."""
    if process.get("timed_out"):
        seconds = f"{limits.timeout:g}"
        note = f"The submission used up its {seconds} s and was stopped."
        return "timed out", Failure(TIMEOUT, seconds=seconds), note
    sig = process.get("signal")
    if sig:
        label, why = _SIGNALS.get(sig, (f"signal {sig}", ""))
        if sig == signal.SIGKILL and type(process.get("oom_kills")) is int:
            if process["oom_kills"] > 0:
                why = f", for using more than its {limits.memory >> 20} MiB of memory"
            else:
                why = ""
        elif sig == signal.SIGKILL and process.get("max_rss_mb"):
            why += f" (it used {process['max_rss_mb']:g} MB)"
        note = f"The grading process was killed by {label}{why}."
        return "failed", Failure(KILLED, how=label, why=why), note
    if not done:
        code = process.get("exit_code")
        how = f"exit code {code}" if code is not None else "no exit status"
        note = f"Your code ended the grading process early ({how}); later checks did not run."
        return "failed", Failure(EXITED_EARLY, how=how), note
    return None


def _excerpt(output: dict[str, Any], limit: int) -> str:
    head = bytes(output["head"]).decode("utf-8", "replace")
    if output["total"] <= len(output["head"]):
        return head
    tail = bytes(output["tail"]).decode("utf-8", "replace")
    left_out = output["total"] - len(output["head"]) - len(output["tail"])
    if left_out <= 0:
        return head + tail
    return f"{head}\n[... {left_out:,} bytes left out ...]\n{tail}"
