"""Time limits: CPU seconds, never wall-clock, so a loaded machine costs no one a point.

A check may use max(its floor, FACTOR x the reference's CPU time) CPU seconds (the floor is
Check.timeout; the reference's time is measured on the grading machine when the hidden tier
computes it, and stored in the fixtures' manifest for the public tier), at most the
instructor's cap (Settings.check_timeout: course.toml [limits], ATTENTION_LAB_CHECK_TIMEOUT,
--check-timeout), or a fixed limit instead (Settings.cpu_limit). One rule in every channel:
each entry point resolves its Settings once and builds its TimeLimits with `TimeLimits.of`.
A check that uses them up is stopped from outside the process that runs it (Stopwatch:
worker.py for local grading, the sandbox's monitor for batch grading); the remaining checks
run in a fresh process. A process that makes no progress at all (blocked in input() or a
sleep) is stopped after STALL_SECONDS of wall time without CPU use.
"""

from __future__ import annotations

import mmap
import os
import signal
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import torch
import torch.nn.functional as F

from ..core.check import Check, ProbeSpec
from ..core.settings import Settings

FACTOR = 20.0
STALL_SECONDS = 30.0
SLOWER_NOTE = 5.0  # a passing check this many times slower than the reference gets a note


@dataclass(frozen=True)
class TimeLimits:
    """The time limits of one grading, made at its entry point and passed down (to the
    engine, the workers, the sandbox): no module state.

    cpu        a fixed CPU limit for every check (Settings.cpu_limit: make grade
               CPU_LIMIT=..., the kit's tests); None: each check's calibrated limit
    cap        CPU seconds no check may exceed, whatever its calibrated limit
               (Settings.check_timeout: the instructor's course.toml [limits]); None: no cap
    stall      wall-clock seconds a process may go without using CPU (blocked) before it
               is stopped
    reference  {check id: the reference's CPU seconds on this machine}: References.cpu,
               which the references fill as each module's are loaded or computed
    """

    cpu: float | None = None
    stall: float = STALL_SECONDS
    reference: Mapping[str, float] = field(default_factory=dict)
    cap: float | None = None

    def __post_init__(self) -> None:
        for value in (self.cpu, self.cap):
            if value is not None and not value > 0:
                raise ValueError(f"a CPU limit must be a positive number of seconds, got {value!r}")
        if not self.stall > 0:
            raise ValueError(
                f"a stall limit must be a positive number of seconds, got {self.stall!r}"
            )

    @classmethod
    def of(cls, settings: Settings, reference: Mapping[str, float] | None = None) -> TimeLimits:
        """The one rule, for every channel (make grade, watch, hint, batch, Gradescope,
        PrairieLearn, nbgrader autograde): the run's settings, resolved once at its entry
        point, and the references' CPU seconds (References.cpu) it is calibrated on."""
        return cls(
            cpu=settings.cpu_limit,
            cap=settings.check_timeout,
            reference=reference if reference is not None else {},
        )

    def reference_cpu(self, check: Check) -> float | None:
        return self.reference.get(check.id)

    def cpu_limit(self, check: Check) -> float:
        """max(the check's floor, FACTOR x the reference's CPU seconds), or the fixed limit;
        at most the cap."""
        if self.cpu is not None:
            limit = self.cpu
        else:
            ref = self.reference.get(check.id)
            limit = max(check.timeout, FACTOR * ref) if ref else check.timeout
        return min(limit, self.cap) if self.cap is not None else limit


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_delay(pid: int) -> float | None:
    """Seconds the process's main thread has waited for a CPU while ready to run (the
    kernel's scheduler statistics, /proc/<pid>/schedstat), or None where the kernel keeps
    none. A wall-clock budget less this is time the process ran or blocked: what a loaded
    machine adds is not charged to the student (the sandbox's submission budget)."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def stop(pid: int) -> None:
    """Stop a process from outside: SIGKILL to its process group (it made itself a session
    leader), else to the process."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Stopwatch:
    """Which check a process runs, and whether it overran, judged from outside it: the
    parent (worker.py) or the sandbox's monitor reads the process's CPU seconds from /proc
    and stops it itself, so no signal ever lands inside the process (or inside torch).

    `limit(check_id)` gives a check's CPU seconds; a check whose process uses no CPU for
    `stall` wall-clock seconds (blocked, not computing) has overrun too.

    The messages come from the process itself, where student code can write them too, or
    keep them from being written. So a clock is never reset: the process runs `order`'s
    checks one after another (channel.probe_all: a start, the check, its outcome), and once
    the running check's outcome has come (`outcome`) the next check's clock starts at once,
    whether or not its start message ever comes (student code that drops every start would
    otherwise run its checks on no clock). A start while a check runs is ignored (a forged
    start of the same check or of the next one would give the slow work a fresh allowance),
    a check started again runs on the clock of its first start, and an outcome for another
    check than the running one stops no clock. The first check's start is sent before any
    student code is imported."""

    def __init__(
        self,
        pid: int,
        limit: Callable[[str], float],
        stall: float = STALL_SECONDS,
        order: Sequence[str] = (),
    ):
        self.pid, self.limit, self.stall = pid, limit, stall
        self.order = list(order)
        self.current: str | None = None
        self.started = self.last_cpu = 0.0
        self.last_progress = time.monotonic()
        self.began: dict[str, float] = {}  # check -> the CPU seconds at its first start

    def start(self, check_id: str) -> None:
        if self.current is not None:
            return
        now = cpu_seconds(self.pid)
        self.current = check_id
        self.started = self.began.setdefault(check_id, now)
        self.last_cpu = now
        self.last_progress = time.monotonic()

    def finish(self) -> float:
        """The CPU seconds the current check used; no check runs after this."""
        used = max(0.0, cpu_seconds(self.pid) - self.started)
        self.current = None
        return used

    def outcome(self, check_id: str) -> float | None:
        """An outcome message for `check_id`: when it is the running check, the CPU seconds
        it used, and the next check of `order` runs on its own clock from now; else None,
        and no clock changes."""
        if check_id != self.current:
            return None
        used = self.finish()
        if check_id in self.order:
            later = self.order[self.order.index(check_id) + 1 :]
            if later:
                self.start(later[0])
        return used

    def overran(self) -> tuple[str, float] | None:
        """("cpu", limit) or ("stall", seconds) when the current check must be stopped."""
        if self.current is None:
            return None
        cpu, now = cpu_seconds(self.pid), time.monotonic()
        limit = self.limit(self.current)
        if cpu - self.started > limit:
            return "cpu", limit
        if cpu > self.last_cpu + 0.01:
            self.last_cpu, self.last_progress = cpu, now
        elif now - self.last_progress > self.stall:
            return "stall", self.stall
        return None


class Board:
    """Which function of the student's module did not finish when a check was stopped: a few
    bytes of memory shared by the process that runs student code and its trusted parent (the
    worker's parent, the sandbox's monitor), made by the parent before it forks that process.

    The process marks the start of each check (`mark`) and the outermost entry and exit of
    each function it tracks (`enter`, `leave`: probing.track wraps the exercises of its
    checks, one slot each, `slots_of`), each with its own CPU time then; after stopping a
    check, the parent reads `values`, and policy.charged decides from them which function did
    not finish: the innermost tracked call entered during that check that had run for most of
    its CPU seconds without returning, or none (a function called again and again, each call
    returning; the stop came in the probe's own code or the kit's). The student's process
    writes it: whatever it says only decides whether later checks are timed out "same as
    above" (0 points) or run to their own limit, never a point.

    `values()`: per slot, the stamp of the entry into a call still running (0: nothing
    tracked there; -1: tracked, not running), then per slot that entry's CPU time (ns), then
    the stamp and the CPU time (ns) of the current check's start."""

    SLOTS = 32  # exercises per process (a module has at most a dozen)
    SIZE = 2 * SLOTS + 2  # the length of values()

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, 8 * self.SIZE)  # anonymous, shared, zeroed
        self.depth = [0] * self.SLOTS  # the process's own count of calls in progress
        self.stamp = 0

    def _set(self, index: int, stamp: int, cpu: int) -> None:
        struct.pack_into("q", self.memory, 8 * index, stamp)
        if index < self.SLOTS:
            index += self.SLOTS
        else:
            index += 1
        struct.pack_into("q", self.memory, 8 * index, cpu)

    def track(self, slot: int) -> None:
        self._set(slot, -1, 0)

    def mark(self) -> None:
        """A check starts: a call entered before it does not count as running in it."""
        self.stamp += 1
        self._set(2 * self.SLOTS, self.stamp, time.process_time_ns())

    def enter(self, slot: int) -> None:
        if self.depth[slot] == 0:
            self.stamp += 1
            self._set(slot, self.stamp, time.process_time_ns())
        self.depth[slot] += 1

    def leave(self, slot: int) -> None:
        self.depth[slot] = max(0, self.depth[slot] - 1)
        if self.depth[slot] == 0:
            self._set(slot, -1, 0)

    def values(self) -> list[int]:
        """What the board says now (the parent reads it once the process was stopped), each
        value within [-1, 10**15] (a CPU time of 11 days): the sandbox's monitor reports it
        in a status message of bounded size, whatever the student's process wrote."""
        return [min(max(v, -1), 10**15) for v in struct.unpack_from(f"{self.SIZE}q", self.memory)]

    def close(self) -> None:
        self.memory.close()


def slots_of(checks: Sequence[Check | ProbeSpec]) -> dict[tuple[str, str], int]:
    """{(module, exercise): its Board slot} for the exercises of `checks`, in order: the
    process that runs them and its parent compute it alike from the same list of checks."""
    found = dict.fromkeys((c.module, c.exercise) for c in checks if c.exercise)
    return {key: slot for slot, key in enumerate(list(found)[: Board.SLOTS])}


def warm_up(*extra: str) -> None:
    """Pay torch's lazy first-use work once, in the grading process, before any student code
    runs: forked workers inherit it, so a check's CPU seconds are its own. (A worker stopped in
    the middle of a lazy import dies with it; the next worker forks from this clean process.)

    `extra`: costly first uses only some modules' probes need, named by their checks
    package's WARM_UP tuple (WARM_UPS below, registry.warm_ups): paid only when such a module
    is graded."""
    if _gpu_visible():  # no backward pass here: it would forbid one in every fork
        return
    _warm_torch()
    for kind in extra:
        WARM_UPS[kind]()


def _gpu_visible() -> bool:
    """A GPU this process may use (a CUDA grading: a CPU grading hides them, settings.
    hide_gpus_unless_cuda). torch's autograd counts the GPUs at its first backward pass and
    then refuses one in any fork of the process, and the warm-ups run backward passes and
    optimizer steps; a CUDA grading's checks pay those first uses themselves. The count is
    NVML's (PYTORCH_NVML_BASED_CUDA_CHECK), which leaves forks able to use CUDA."""
    return torch.cuda.is_available()


@cache
def _warm_torch() -> None:
    q = torch.randn(1, 2, 3, 4)
    F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3, dtype=torch.bool))
    F.scaled_dot_product_attention(q.double(), q.double(), q.double(), is_causal=True)
    torch.multinomial(torch.ones(2, 3), 1, generator=torch.Generator().manual_seed(0))
    F.layer_norm(q, (4,)), F.gelu(q), F.elu(q), torch.nn.Linear(4, 4)(q).sum().backward()


@cache
def _warm_meta() -> None:
    """The meta device's kernels load lazily (torch._refs and the compiler stack: ~1.4 CPU-s)."""
    torch.ones(2, 2, dtype=torch.bool, device="meta").triu(1)


@cache
def _warm_matplotlib() -> None:
    """matplotlib's import, fonts and text layout: what plots.py's first figure pays."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure

    fig = matplotlib.figure.Figure(figsize=(2, 2), layout="constrained")
    ax = fig.add_subplot()
    fig.colorbar(ax.imshow([[0.0, 1.0]], vmin=0, vmax=1), ax=ax)
    ax.set_xticks(range(2), ["a", "b"], rotation=90)
    ax.set_title("warm")
    ax.plot([1, 2], [1, 2], marker="o", label="x")
    ax.set_xscale("log", base=2)
    ax.legend()
    fig.canvas.draw()


@cache
def _warm_optim() -> None:
    """An optimizer's first step imports torch._dynamo lazily (about 800 modules, sympy among
    them: ~1.5 CPU-s), in every forked process that has not: a probe's or a student's
    training loop paid it once per check's worker, mutant and submission."""
    weight = torch.nn.Parameter(torch.zeros(2))
    for optimizer in (
        torch.optim.SGD([weight], lr=0.1),
        torch.optim.Adam([weight]),
        torch.optim.AdamW([weight]),
    ):
        weight.grad = torch.ones(2)
        optimizer.step()
        optimizer.zero_grad()


@cache
def _warm_autograd() -> None:
    """A backward pass given its output's gradient (tensor.backward(g), autograd.grad(...,
    grad_outputs)) imports torch.fx's symbolic shapes and sympy at its first use: ~0.3
    CPU-s and ~40 MB of resident memory, which a measured run must not count."""
    x = torch.ones(2, requires_grad=True)
    torch.autograd.grad(2 * x, x, torch.ones(2))


@cache
def _warm_compiler() -> None:
    """torch's compiler stack (torch._dynamo, torch.fx's symbolic shapes, sympy: ~0.9 CPU-s
    and ~90 MB resident), which an optimizer's first step, the meta device, torch.func's
    transforms and torch.utils.checkpoint import at their first use."""
    import torch._dynamo  # noqa: F401


WARM_UPS: dict[str, Callable[[], None]] = {
    "autograd": _warm_autograd,
    "compiler": _warm_compiler,
    "meta": _warm_meta,
    "matplotlib": _warm_matplotlib,
    "optim": _warm_optim,
}


def warm_ups_of(checks: Iterable[Check | ProbeSpec]) -> list[str]:
    """The extra warm-ups the modules of `checks` declare (registry.warm_ups: WARM_UP in
    their checks package, and TRAIN_WARM_UP where one of `checks` is its slow training run);
    a check of no exercise module (a kit test's own) declares none."""
    from ..core import registry  # (judge side: the sandboxed process never calls this)

    slow: dict[str, bool] = {}
    for c in checks:
        slow[c.module] = slow.get(c.module, False) or bool(getattr(c, "slow", False))
    known = set(registry.modules())
    found: dict[str, None] = {}
    for module, trains in slow.items():
        if module in known:
            found.update(dict.fromkeys(registry.warm_ups([module], slow=trains)))
    return list(found)
