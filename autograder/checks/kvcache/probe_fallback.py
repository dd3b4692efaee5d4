"""Probe side of kvcache's checks: the layer's and greedy_decode's calls run again with a working
cache, in a forked grandchild, when the student's own cache made the run fail.

A KVCache whose append concatenates along a wrong axis (kv-append-wrong-axis) returns tensors
no layer can run on: the student's CachedAttention and greedy_decode raise at the first step,
and there is nothing to judge them on. Their checks are meant to judge the layer's and the
loop's own work (docs/fairness.md), so the probe runs the same calls once more with a minimal
cache (torch.cat along the time axis, nothing a student could not write), and the judge
accepts that run only when the student's own cache shows that named mistake (judge_given).

The cache must never exist in the process that runs the checks: one worker runs all of a
module's checks in turn, and student code could keep anything it meets there and hand it back
in a later check (cache-shapes would pass with the grader's cache). So the run happens in a
fork of this process (the grandchild), which builds the cache, runs the probe, writes its
plain outputs (sandbox/wire.py's encoding) to a pipe and ends with os._exit. Its limits: its
own CPU seconds (FALLBACK_CPU), a wall-clock backstop well inside the parent's stall limit
(FALLBACK_WAIT: a grandchild that blocks), at most FALLBACK_BYTES of outputs, no fallback of its
own, no file descriptor but the pipe (it cannot write to the grader's channel), and no writes to
the shared limits.Board (its calls are not the worker's). If the fork is refused (a sandbox's
process limit) or the grandchild fails, nothing comes back and the check is judged as before.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any

import torch

from ...run import limits
from ...run.sandbox import wire

FALLBACK_CPU = 10  # CPU seconds of the grandchild (the reference's calls take well under 1 s)
FALLBACK_WAIT = 20.0  # wall-clock seconds the worker waits (limits.STALL_SECONDS is 30)
FALLBACK_BYTES = 4 << 20  # bytes of outputs read back (the reference's are a few kB)
PREFIX = "fallback/"  # where its outputs go in the check's outputs
ERROR = "fallback-error"  # why there are none


def _working_cache() -> type:
    """A minimal KVCache: keys and values per layer, concatenated along the time axis (dim 2).
    Made only in the grandchild (a class statement run there), never in the worker."""

    class Cache:
        def __init__(self, num_layers: int) -> None:
            self.keys: list[Any] = [None] * num_layers
            self.values: list[Any] = [None] * num_layers

        def reset(self) -> None:
            self.keys = [None] * len(self.keys)
            self.values = [None] * len(self.values)

        def length(self, layer: int = 0) -> int:
            return 0 if self.keys[layer] is None else int(self.keys[layer].size(2))

        def append(self, layer: int, k: Any, v: Any) -> tuple[Any, Any]:
            if self.keys[layer] is not None:
                k = torch.cat([self.keys[layer], k], dim=2)
                v = torch.cat([self.values[layer], v], dim=2)
            self.keys[layer], self.values[layer] = k, v
            return k, v

    Cache.__name__ = Cache.__qualname__ = "KVCache"
    return Cache


def _quiet_board() -> None:
    """The grandchild shares the worker's limits.Board (an anonymous shared mapping): its calls
    of the student's functions must not mark it (the parent reads it for the worker's)."""
    for name in ("mark", "enter", "leave", "track"):
        setattr(limits.Board, name, lambda self, *args: None)


def _bind(mod: Any, cache: type) -> None:
    """Bind the name KVCache to `cache` in the module and in the globals greedy_decode looks
    names up in (a notebook's namespace is not the module object the probe is given), through
    its wrappers (torch.no_grad, the grader's tracking). In the grandchild only."""
    mod.KVCache = cache
    fn = getattr(mod, "greedy_decode", None)
    for _ in range(8):  # wrappers of wrappers, a few at most
        names = getattr(fn, "__globals__", None)
        if isinstance(names, dict) and "KVCache" in names:
            names["KVCache"] = cache
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            break


def _grandchild(mod: Any, x: Any, probe: Callable[..., dict[str, Any]], write: int) -> None:
    """Never returns. Confine, run probe(mod, x) with mod.KVCache bound to the working cache,
    write the encoded outputs to `write`."""
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        top = FALLBACK_CPU + 1 if hard == resource.RLIM_INFINITY else min(hard, FALLBACK_CPU + 1)
        resource.setrlimit(resource.RLIMIT_CPU, (min(FALLBACK_CPU, top), top))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd > 2 and fd != write:
                try:
                    os.close(fd)
                except OSError:
                    pass
        _quiet_board()
        torch.set_num_threads(1)  # OpenMP's threads did not survive the fork
        _bind(mod, _working_cache())
        got = probe(mod, x)
        described, blob = wire.encode_outputs(got)
        data = wire.frame({"outputs": described}, blob)
        if len(data) <= FALLBACK_BYTES:
            view = memoryview(data)
            while view:
                view = view[os.write(write, view) :]
    except BaseException:
        pass
    finally:
        os._exit(0)


def _read(read: int) -> bytes | str:
    """What the grandchild wrote, or why nothing usable came back."""
    data, deadline = bytearray(), time.monotonic() + FALLBACK_WAIT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return f"no result within {FALLBACK_WAIT:.0f} s"
        ready, _, _ = select.select([read], [], [], left)
        if not ready:
            continue
        chunk = os.read(read, 1 << 16)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > FALLBACK_BYTES:
            return f"more than {FALLBACK_BYTES} bytes of outputs"


def run_with_working_cache(
    mod: Any, x: Any, probe: Callable[..., dict[str, Any]]
) -> dict[str, Any]:
    """probe(mod, x) run in a forked grandchild whose mod.KVCache is a working cache: its
    outputs under PREFIX, or ERROR (why there are none: the fork refused, the
    grandchild ended without a result, ...). The outputs are student code's, as hostile as the
    worker's own: the parent validates both alike."""
    wire.flush_streams()
    try:
        read, write = os.pipe()
    except OSError as e:
        return {ERROR: f"no pipe: {e}"[:200]}
    try:
        pid = os.fork()
    except OSError as e:
        os.close(read)
        os.close(write)
        return {ERROR: f"fork refused: {e}"[:200]}
    if pid == 0:
        _grandchild(mod, x, probe, write)
    os.close(write)
    data: bytes | str = "no result"
    try:
        data = _read(read)
    except OSError as e:
        data = f"reading its outputs failed: {e}"[:200]
    finally:
        os.close(read)
        try:  # done or not, it has nothing more to say (it may have closed the pipe and gone on)
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    if isinstance(data, str):
        return {ERROR: data}
    if not data:
        return {ERROR: "the grandchild ended without outputs (its run raised, or was stopped)"}
    try:
        messages, broken = wire.parse(data)
        if broken or len(messages) != 1:
            return {ERROR: "the grandchild's outputs are malformed"}
        header, blob = messages[0]
        outputs = wire.decode_outputs(header.get("outputs"), blob)
    except Exception as e:
        return {ERROR: f"the grandchild's outputs are malformed: {e}"[:200]}
    return {PREFIX + key: value for key, value in outputs.items()}
