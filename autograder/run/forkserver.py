"""The pre-fork server: one process pays for torch's import and the kit's warm-up once, then
forks a child per request. A fork costs milliseconds; a fresh interpreter would pay torch's
import (about 1.4 s) and its lazy first uses each time.

Three servers are built on it, each keeping only what differs:

- the warm grader of `make grade` (warm.py): a Unix socket in build/ for the command line's
  client, the student's own uid only, an idle timeout; each child runs `cli.main`, whose
  forked workers run the student's code (worker.py); the client gets the child's exit status.
- `make watch` (channels/watch.py): the submission's files, looked at between rounds of the
  event loop (`step`); each save forks a child that grades the module from the warm state
  (its probes in forked workers, worker.py, as make grade's) and sends its results back on
  a pipe; its end (`on_exit`) tells the watcher what became of it.
- the sandbox's zygote (sandbox/zygote.py): a socket pair to the official grader; a scrubbed
  environment and memory (the hidden seed sealed away: nothing of the grader reaches a fork);
  each child is the trusted monitor of one confined sandboxed process, or a reference server.

`ForkServer` holds the shared part: the warm-up (`warm`: torch on one thread, so that no
OpenMP pool exists when it forks; `ready`: gc.freeze, fewer copy-on-write pages per fork),
one event loop over the sockets it serves and its children (`watch`, `serve`), one way to
fork a child that never returns into the server's code (`fork`), and one way to learn how a
child ended (a pidfd per child whose exit status is wanted; the others are reaped by the
kernel). Importing this module imports the standard library only (the warm grader's client
imports it).
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

Handler = Callable[[Any], None]  # called with the object that became readable

# --------------------------------------------------------------------------- the collector

# A fresh interpreter of the kit imports torch and the kit: about a million objects that live
# as long as the process. CPython collects its oldest generation each time the heap has grown
# by a quarter, walking every object, so it does so over and over while they are imported
# (measured: 0.5 of the 3.7 CPU-s of a fresh `make grade`'s own process; about a fifth of all
# the CPU of four of the kit's sandbox and nbgrader test files). `quiet_start`, first thing in
# each of the kit's own interpreters, makes those collections a hundred times rarer while it
# starts; `settle`, before its first fork (a worker, a server's child: where student code may
# run) or once it serves, moves what exists out of the collector's reach for good (gc.freeze:
# it lives as long as the process anyway, and a fork's reference counting then copies fewer
# pages) and brings the interpreter's own thresholds back. Every fork runs with the usual
# collector; a process that never forks keeps the rare oldest-generation collections (the
# younger ones, which free short-lived cycles, are unchanged).
DEFAULT_THRESHOLDS = gc.get_threshold()
STARTING_THRESHOLDS = (*DEFAULT_THRESHOLDS[:2], DEFAULT_THRESHOLDS[2] * 100)
_settled = False


def quiet_start() -> None:
    """First thing in a fresh interpreter of the kit: rare full collections while it imports."""
    if not _settled:
        gc.set_threshold(*STARTING_THRESHOLDS)


def settle(collect: bool = False) -> None:
    """Once per process, before its first fork or when it starts serving: freeze what exists
    (after a full collection when `collect`) and bring back the default thresholds. Later
    calls do nothing, so a long-running process never freezes what it made since."""
    global _settled
    if _settled:
        return
    _settled = True
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*DEFAULT_THRESHOLDS)


class ForkServer:
    def __init__(self, *, reap_all: bool = False):
        """`reap_all`: no child's exit status is wanted (the zygote): the kernel reaps them
        all (SIGCHLD ignored); else `fork(on_exit=...)` reports each one's (the warm grader)."""
        self.sel = selectors.DefaultSelector()
        self.children: dict[int, int] = {}  # pid -> its pidfd (-1 when not followed)
        self.reap_all = reap_all
        self.stopped = False
        self.last = time.monotonic()  # the last request or child's end (for `idle`)
        if reap_all:
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    # ------------------------------------------------------------------ warm-up

    @staticmethod
    def warm(*kinds: str) -> int:
        """Import torch, keep it on one thread (a fork of a process with an OpenMP pool hangs
        at its first parallel operation) and pay the lazy first uses of `kinds`
        (limits.WARM_UPS) once; returns torch's thread count, for a child to restore."""
        import torch

        from . import limits

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        limits.warm_up(*kinds)
        return threads

    @staticmethod
    def ready() -> None:
        """Before serving: move everything imported so far out of the collector's reach, so
        that a child's reference counting does not copy the server's pages (`settle`)."""
        settle(collect=True)

    # ------------------------------------------------------------------ children

    def fork(
        self,
        child: Callable[[], int | None],
        *,
        close: Iterable[Any] = (),
        on_exit: Callable[[int], None] | None = None,
    ) -> int:
        """Fork a child that runs `child()` and ends with its exit code (1 and the traceback
        on stderr when it raises; it never returns into the server's code). The child closes
        `close` (sockets or descriptors of the server's it has no use for) and the server's
        event loop first. `on_exit(wait status)`: called in the server when the child ended."""
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for item in close:
                    item.close() if hasattr(item, "close") else os.close(item)
                self.sel.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                result = child()
                code = result if isinstance(result, int) else 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                try:
                    traceback.print_exc()
                except BaseException:
                    pass
            finally:
                os._exit(code)
        pidfd = -1
        if on_exit is not None:
            pidfd = os.pidfd_open(pid)
            self.sel.register(pidfd, selectors.EVENT_READ, lambda _: self._ended(pid, on_exit))
        self.children[pid] = pidfd
        return pid

    def _ended(self, pid: int, on_exit: Callable[[int], None]) -> None:
        pidfd = self.children.pop(pid)
        self.sel.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.last = time.monotonic()
        on_exit(status)

    def running(self) -> list[int]:
        """The children whose end the server follows and that have not ended yet."""
        return [pid for pid, pidfd in self.children.items() if pidfd >= 0]

    def signal_all(self, sig: int) -> None:
        for pid in self.running():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    # ------------------------------------------------------------------ the loop

    def watch(self, item: Any, handler: Handler) -> None:
        """Call `handler(item)` whenever `item` (a socket, a descriptor) is readable."""
        self.sel.register(item, selectors.EVENT_READ, handler)

    def unwatch(self, item: Any) -> None:
        try:
            self.sel.unregister(item)
        except (KeyError, ValueError):
            pass

    def stop(self) -> None:
        """End `serve` (after the current event)."""
        self.stopped = True

    def step(self, timeout: float | None) -> None:
        """One round of the event loop: wait up to `timeout` seconds (None: until something
        happens) and call the handlers of what became readable (a server with work of its own
        between rounds, as `make watch`'s look at the files, calls this itself)."""
        for key, _ in self.sel.select(timeout=timeout):
            key.data(key.fileobj)
            if self.stopped:
                return

    def serve(self, idle: float | None = None) -> None:
        """Serve until `stop()`, or, with `idle`, until no followed child runs and nothing
        happened for `idle` seconds."""
        while not self.stopped:
            if idle is not None and not self.running() and time.monotonic() - self.last >= idle:
                return
            self.step(5 if idle is not None else None)

    def close(self) -> None:
        self.sel.close()
