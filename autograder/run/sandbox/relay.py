"""The monitor's watch over the sandboxed process (trusted side).

The sandboxed process writes its messages to a pipe the monitor reads; the monitor copies
every byte to the grader's channel and follows the headers (wire.Headers) to know which
check runs. Time is judged as in local grading (worker.py, limits.Stopwatch): CPU seconds read
from /proc, per check (`cpu_limits`, computed by the runner from limits.TimeLimits), a grace
for a process that makes no progress, and the submission's budget: wall-clock seconds less the
time the process waited for a CPU (limits.run_delay), so a loaded machine costs no one a point,
with a hard wall-clock stop at WALL_BACKSTOP times the budget. An overrun
is stopped from outside (SIGKILL to the process group; the monitor then kills the cgroup):
nothing is ever interrupted inside the process, so a timeout cannot leave torch
half-imported for the checks after it. The runner grades the remaining checks in a fresh
sandboxed process.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

from .. import limits
from ..channel import OUTCOMES
from . import wire

POLL_SECONDS = 0.05
# However long the machine keeps the process waiting for a CPU, it is stopped after this many
# times its budget of wall-clock seconds (a grader that must finish somewhere).
WALL_BACKSTOP = 4.0


def _forward(target: int, data: bytes) -> int:
    """Copy to the grader's channel; -1 once the grader stopped reading (it caps what it
    reads), after which the data is dropped but the watch goes on."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(target, view) :]
    except OSError:
        os.close(target)
        return -1
    return target


def follow(
    pid: int,
    source: int,
    target: int,
    cpu_limits: dict[str, float],
    stall: float,
    timeout: float,
) -> dict[str, Any]:
    """Relay `source` (the sandboxed process's channel) to `target` until the process ends
    or is stopped. Returns {"timed_out": True} (the budget ran out: `timeout` seconds of
    wall-clock time less the time the process waited for a CPU), {"stopped": {"check",
    "why": "cpu" | "stall", "seconds"}} (a check overran), or {}; with "waited": the seconds
    it waited for a CPU (0 where the kernel keeps no count). Closes both fds; the caller
    reaps the process (its count is read before that)."""
    watch = limits.Stopwatch(pid, lambda c: cpu_limits[c], stall, order=list(cpu_limits))
    headers = wire.Headers()
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(source, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    start = time.monotonic()
    delay0 = limits.run_delay(pid)
    waited = 0.0

    def wait_so_far() -> float:
        now = limits.run_delay(pid)
        return max(0.0, now - delay0) if now is not None and delay0 is not None else 0.0

    report: dict[str, Any] = {}
    exited = False
    try:
        while not exited:
            elapsed = time.monotonic() - start
            if elapsed > timeout:  # less the time spent waiting for a CPU
                waited = max(waited, wait_so_far())
                if elapsed - waited > timeout or elapsed > WALL_BACKSTOP * timeout:
                    report = {"timed_out": True}
                    break
            for fd, _ in poller.poll(POLL_SECONDS * 1000):
                if fd == pidfd:
                    exited = True
                    os.set_blocking(source, False)
                try:
                    data = os.read(source, 1 << 16) if fd == source or exited else b""
                except BlockingIOError:
                    data = b""
                while data:
                    if target >= 0:
                        target = _forward(target, data)
                    for header in headers.feed(data):
                        _observe(watch, header, cpu_limits)
                    if not exited:
                        break
                    try:  # the process ended: take what it left in the pipe, then stop
                        data = os.read(source, 1 << 16)
                    except BlockingIOError:
                        data = b""
                if fd == source and not data and not exited:
                    poller.unregister(source)  # EOF: every writer is gone
            if not exited and watch.current is not None:
                over = watch.overran()
                if over is not None:
                    why, seconds = over
                    report = {"stopped": {"check": watch.current, "why": why, "seconds": seconds}}
                    break
    finally:
        waited = max(waited, wait_so_far())  # the process is not reaped yet: its count stays
        if report:
            limits.stop(pid)
        for fd in (source, target, pidfd):
            if fd >= 0:
                os.close(fd)
    return {**report, "waited": round(waited, 3)}


def _observe(watch: limits.Stopwatch, header: dict[str, Any], cpu_limits: dict[str, float]) -> None:
    kind, check = header.get("type"), header.get("check")
    if type(check) is not str or check not in cpu_limits:
        return
    if kind == "start":
        watch.start(check)
    elif kind in OUTCOMES:
        watch.outcome(check)
