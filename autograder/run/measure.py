"""Efficiency measured from outside the student's process: its peak memory and CPU seconds.

A measured check (core.Check.measured) runs each of its parts (the same call at T and at 2T)
in a fresh process of its own, in every placement that runs student code in a process: the
forked worker (make grade, worker.py), the sandbox (batch, Gradescope, PrairieLearn, nbgrader
autograde: sandbox/zygote.py's monitor) and, for the notebook kernel's own feedback, a fork
of the kernel (`in_fork`). The parent is the one that measures:

  1. the child draws its inputs and sets its allocator to give large blocks back at once
     (`prepare`), then, before any student code exists in it, says it is ready and waits
     (`child_handshake`);
  2. the parent reads the child's baseline from the kernel (`Baseline.take`: its resident
     memory, the high-water mark reset to it, its CPU seconds and, in the sandbox, its
     cgroup's charge) and lets it go;
  3. once the child has ended, the parent reads what the kernel kept of it (wait4's rusage:
     the high-water mark of its resident memory and its CPU seconds; the cgroup's peak) and
     adds the difference to the outputs as "part<k>/measured/<name>" (`merge`).

Nothing the child says about its own memory or time is read, so patching resource, psutil,
torch's allocator statistics or the kit's probes changes nothing, and a key the child writes
under "measured/" is dropped. What student code could still do is use *more* (it is charged),
or shed resident pages it inherited (the kit's library code) to make room: the sandbox's
cgroup charges only the pages the process itself brought in, and the verdict takes the larger
of the two measures.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import time
from dataclasses import dataclass, replace
from typing import Any

import torch

from ..core.check import CRASH, Check, Failure, Outputs, Result, Status
from .sandbox import wire

PREFIX = "measured/"
# glibc's malloc keeps freed blocks of up to 32 MB in its heap once it has seen one that size
# (a dynamic threshold), so a loop of (T, chunk) tensors would look like a (T, T) one; with a
# fixed threshold every block of 64 KiB or more is its own mapping, returned when freed.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 64 << 10


def prepare() -> None:
    """In the measured child, before any student code: every large block is mapped on its own
    and unmapped when freed (glibc; elsewhere nothing changes), so that the resident memory
    follows the tensors alive."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)
    except (OSError, AttributeError):
        pass


def pipes() -> tuple[int, int, int, int]:
    """(ready_r, ready_w, go_r, go_w): the two pipes of one handshake."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    return ready_r, ready_w, go_r, go_w


def child_handshake(ready_w: int, go_r: int) -> None:
    """The child's half, before any student code runs in it: ready, then wait for the parent."""
    prepare()
    try:
        # Its own CPU seconds so far (kit code only: no student code has run yet, so this
        # one report is trusted; the kernel's count from outside is in clock ticks).
        usage = resource.getrusage(resource.RUSAGE_SELF)
        os.write(ready_w, b"r" + repr(usage.ru_utime + usage.ru_stime).encode())
        os.read(go_r, 1)
    finally:
        os.close(ready_w)
        os.close(go_r)


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    found = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) << 10
    return found


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cgroup_memory(dirs: dict[str, str] | None) -> tuple[int, int] | None:
    """(bytes charged now, the peak) of a sandbox's cgroup (v2, else v1), or None."""
    if not dirs:
        return None
    try:
        if "unified" in dirs:
            d = dirs["unified"]
            if not os.path.exists(f"{d}/memory.peak"):
                return None
            now = int(open(f"{d}/memory.current").read())
            return now, int(open(f"{d}/memory.peak").read())
        if "memory" in dirs:
            d = dirs["memory"]
            now = int(open(f"{d}/memory.usage_in_bytes").read())
            return now, int(open(f"{d}/memory.max_usage_in_bytes").read())
    except (OSError, ValueError):
        pass
    return None


def _reset_cgroup_peak(dirs: dict[str, str]) -> None:
    for name, file in (("memory", "memory.max_usage_in_bytes"), ("unified", "memory.peak")):
        if name in dirs:
            try:
                with open(f"{dirs[name]}/{file}", "w") as f:
                    f.write("0")
            except OSError:  # v2 before Linux 6.12: the peak since the cgroup was made
                pass


@dataclass
class Baseline:
    """The measured child as the parent found it before any student code ran in it."""

    rss: int  # bytes resident (the high-water mark, reset to it where the kernel lets us)
    cpu: float  # CPU seconds used
    cgroup: int | None = None  # bytes charged to its cgroup (the sandbox), if it has one

    @classmethod
    def take(
        cls,
        pid: int,
        ready_r: int,
        go_w: int,
        timeout: float,
        cgroup: dict[str, str] | None = None,
    ) -> Baseline | None:
        """The parent's half of the handshake: wait for the child's "ready" (at most
        `timeout` seconds), read its baseline, let it go. None when the child never got ready
        (it died or hung while starting: no student code ran, the run reports it)."""
        try:
            ready, _, _ = select.select([ready_r], [], [], timeout)
            said = os.read(ready_r, 64) if ready else b""
            if not said.startswith(b"r"):
                return None
            cpu = float(said[1:])
            try:  # "5": the high-water mark of resident memory back to what is resident now
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:  # another uid: the mark as it is (what started it is the kit's)
                pass
            status = _status(pid)
            charged = cgroup_memory(cgroup)
            if charged is not None and cgroup:
                _reset_cgroup_peak(cgroup)
            baseline = cls(
                rss=max(status["VmHWM"], status["VmRSS"]),
                cpu=cpu if 0 <= cpu < 1e6 else _cpu(pid),
                cgroup=charged[0] if charged else None,
            )
            os.write(go_w, b"g")
            return baseline
        except (OSError, KeyError, ValueError, IndexError):
            return None
        finally:
            os.close(ready_r)
            os.close(go_w)

    def measured(self, usage: Any, cgroup_peak: int | None = None) -> dict[str, float]:
        """What the child added from the baseline to its end (`usage`: wait4's rusage):
        peak_bytes (the larger of the resident high-water mark's and the cgroup peak's rise)
        and cpu_seconds."""
        peak = max(0, int(usage.ru_maxrss) * 1024 - self.rss)
        if cgroup_peak is not None and self.cgroup is not None:
            peak = max(peak, cgroup_peak - self.cgroup)
        cpu = max(0.0, float(usage.ru_utime) + float(usage.ru_stime) - self.cpu)
        return {"peak_bytes": float(peak), "cpu_seconds": round(cpu, 4)}


def merge(check: Check, parts: list[tuple[Result | Outputs, dict[str, float] | None]]) -> Any:
    """The outcome of a measured check from its parts' (outcome, what the parent measured):
    the first part that ended without outputs (a crash, a timeout, not attempted) is the
    check's Result; else every part's outputs under "part<k>/", and the parent's measures
    under "part<k>/measured/" (anything the child sent under that name is dropped first; a
    part the parent could not measure has none, and its verdict cannot pass)."""
    got: dict[str, Any] = {}
    for k, (outcome, measured) in enumerate(parts):
        if isinstance(outcome, Result):  # never a pass: a part's own failure, as the check's
            return replace(
                outcome,
                check_id=check.id,
                name=check.name,
                module=check.module,
                points=check.points,
                score=0.0,
            )
        for key, value in outcome.items():
            if not key.startswith(PREFIX):
                got[f"part{k}/{key}"] = value
        for name, value in (measured or {}).items():
            got[f"part{k}/{PREFIX}{name}"] = value
    return got


# --------------------------------------------------------------------------- in a fork


def in_fork(run: Any, timeout: float = 120.0) -> tuple[Result | Outputs, dict[str, float] | None]:
    """run() (a part's probe: outputs, or the Result of a check that ended there) in a fork of
    this process, measured from here: (its outcome, what it added). For the notebook kernel's
    own feedback (engine.run_check), whose student code lives in the kernel itself."""
    ready_r, ready_w, go_r, go_w = pipes()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the measured child
        code = 0
        try:
            os.close(ready_r)
            os.close(go_w)
            os.close(out_r)
            torch.set_num_threads(1)
            child_handshake(ready_w, go_r)
            got = run()
            if isinstance(got, Result):
                message: dict[str, Any] = {"result": got.status.value, "id": got.misconception}
                message.update(message=got.message, hint=got.hint, details=got.details)
                wire.send(out_w, {"type": "result", **message})
            else:
                described, blob = wire.encode_outputs(got)
                wire.send(out_w, {"type": "outputs", "outputs": described}, blob)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(go_r)
    os.close(out_w)
    baseline = Baseline.take(pid, ready_r, go_w, timeout)
    stream = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([out_r], [], [], 1.0)
        if ready:
            chunk = os.read(out_r, 1 << 20)
            if not chunk:
                break
            stream += chunk
    os.close(out_r)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    _, _, usage = os.wait4(pid, 0)
    messages, _rest, _broken = wire.split(stream)
    for header, blob in messages:
        if header.get("type") == "outputs":
            outputs = wire.decode_outputs(header["outputs"], blob)
            return outputs, baseline.measured(usage) if baseline else None
        if header.get("type") == "result":
            return _result_of(header), None
    return _crashed(Failure(CRASH, error="the measured process ended without a result", where=""))


def _result_of(header: dict[str, Any]) -> Result:
    return Result(
        check_id="",
        name="",
        module="",
        points=0.0,
        score=0.0,
        status=Status(str(header.get("result"))),
        misconception=str(header.get("id", "")),
        message=str(header.get("message", "")),
        hint=str(header.get("hint", "")),
        details=dict(header.get("details") or {}),
    )


def _crashed(failure: Failure) -> tuple[Result, None]:
    result = Result("", "", "", 0.0, 0.0, Status.FAILED, failure.misconception.id)
    result.message, result.hint = failure.message, failure.hint
    return result, None
