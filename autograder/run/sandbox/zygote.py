"""A zygote (the pre-fork server of forkserver.py, confined): torch is imported once, every
submission gets a fork of it.

The grader starts the zygote as a fresh interpreter (never a fork of itself: the grader's
memory holds judges, references and seeds) that imports torch and the base of the probe side
(view.BASE) only: no probe file, no stand-in, so that no fork of it holds anything the view
of the module it grades leaves out (view.py); the sandboxed process imports those from its
view. Importing this module does not import torch: a grader starts its Zygote first, so
that the zygote's torch import and warm-up overlap the grader's own. For each
submission the zygote forks a *monitor* (trusted) that forks the *sandboxed process*
(child.py), waits for it with a wall-clock limit, kills it (and anything it spawned) when
time is up, and reports the exit status on a status pipe. A fork costs milliseconds; a fresh
interpreter would pay torch's import (about 1.4 s) per submission.

The zygote also forks the reference servers that compute the hidden tier's reference
outputs: trusted, never confined, never the parent of a sandboxed process (reference_fork.py,
Zygote.references).

Requests travel over a Unix socket pair with the pipe ends attached (SCM_RIGHTS); the
sandboxed process closes the socket before it runs any student code.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..forkserver import ForkServer
from .jail import (
    PR_SET_CHILD_SUBREAPER,
    SAFE_ENV,
    Isolation,
    Limits,
    join_cgroup,
    kill_cgroup,
    libc,
    new_cgroup,
    scrub_process_memory,
    seccomp_module,
    sweep,
    sweep_files,
    unshare_pid,
)

if TYPE_CHECKING:  # for annotations only: this module imports no grader module at its top
    from ...core.check import Outputs

# The hidden tier's reference outputs are computed in forks of the zygote (warm torch),
# never confined, running reference_fork.serve. That module imports fixtures and solutions/,
# so no view may hold it: the zygote imports it by name, in those forks only.
REFERENCE_FORK = "autograder.run.sandbox.reference_fork"


class Zygote:
    def __init__(self, warm_up: bool = True, servers: int = 0, kinds: Sequence[str] | None = None):
        """`servers`: reference servers to fork as soon as torch is warm, before the zygote
        warms up matplotlib (no verdict of plots reads a reference, so no server draws),
        so that the first students' references are computed while the zygote finishes.
        `kinds`: the warm-ups (limits.WARM_UPS) beyond torch's own that the graded modules'
        probes need (registry.warm_ups); None: every kind."""
        from ...core import paths

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        early = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(servers)]
        fds = [theirs.fileno(), *(t.fileno() for _, t in early)]
        code = (  # quiet_start: rare full collections while it imports (forkserver.py)
            "from autograder.run.forkserver import quiet_start; quiet_start(); "
            "from autograder.run.sandbox.zygote import main; "
            f"main({fds[0]}, {warm_up}, {fds[1:]}, {None if kinds is None else list(kinds)!r})"
        )
        env = dict(SAFE_ENV, PYTHONPATH=str(paths.ROOT))
        try:  # -P: no script folder or cwd on sys.path
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-c", code], pass_fds=fds, env=env
            )
        finally:
            theirs.close()
            for _, t in early:
                t.close()
        self.pid, self.sock, self.lock = self.process.pid, ours, threading.Lock()
        self._idle: queue.SimpleQueue[tuple[socket.socket, int]] = queue.SimpleQueue()
        self._early: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        for o, _ in early:
            self._early.put(o)
        self._servers: dict[int, socket.socket] = {}  # pid: socket, every live server

    def start(self, request: dict[str, Any]) -> tuple[int, int, int]:
        """Start the sandboxed run of one submission; returns the read ends of its
        (channel, output, status) pipes. The caller reads them until EOF and closes them."""
        ends = [os.pipe() for _ in range(3)]
        data = json.dumps(request).encode()
        try:
            with self.lock:
                socket.send_fds(self.sock, [data], [w for _, w in ends])
        finally:
            for _, w in ends:
                os.close(w)
        return ends[0][0], ends[1][0], ends[2][0]

    def _server(self) -> tuple[socket.socket, int]:
        """An idle reference server (reference_fork.serve), or a new one: (socket, pid)."""
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        try:
            ours = self._early.get_nowait()  # forked at the zygote's start
        except queue.Empty:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                with self.lock:
                    verb = b'{"verb": "reference-server"}'
                    socket.send_fds(self.sock, [verb], [theirs.fileno()])
            finally:
                theirs.close()
        ours.settimeout(600)
        try:
            pid = int(ours.recv(64))
        except (OSError, ValueError):
            ours.close()
            raise OSError("a reference server did not start") from None
        ours.settimeout(None)
        self._servers[pid] = ours
        return ours, pid

    def references(
        self, modules: list[str], seed: int, solutions: Path, timeout: float = 600.0
    ) -> tuple[dict[str, dict[str, Outputs]], dict[str, dict[str, float]], dict[str, str]]:
        """The hidden tier's reference outputs of `modules` on `seed`, computed from
        `solutions` by a reference server, a trusted fork of the zygote (reference_fork.py):
        ({module: {slug: outputs}}, {module: {slug: CPU seconds}}, {module: why it could not
        be had}). Several threads may ask at once: each gets a server of its own."""
        read, write = os.pipe()
        data = json.dumps({"modules": modules, "seed": seed, "solutions": str(solutions)})
        try:
            for attempt in range(2):  # a server that died before its request is replaced, once
                pid = None
                try:
                    server, pid = self._server()
                    socket.send_fds(server, [data.encode()], [write])
                    break
                except OSError:
                    if pid is not None:
                        self._stop_server(pid)
                    if attempt:
                        raise
        finally:
            os.close(write)
        assert pid is not None  # the loop ends with a server, or it raised
        stream = bytearray()
        deadline = time.monotonic() + timeout
        ended = False  # the server closed the pipe: it answered, or it died
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(read, selectors.EVENT_READ)
                while time.monotonic() < deadline:
                    if sel.select(timeout=1.0):
                        chunk = os.read(read, 1 << 20)
                        if not chunk:
                            ended = True
                            break
                        stream += chunk
        finally:
            os.close(read)
        found: dict[str, dict[str, Outputs]] = {m: {} for m in modules}
        cpu: dict[str, dict[str, float]] = {m: {} for m in modules}
        errors: dict[str, str] = {}
        from . import wire  # torch: this process has it by now (the Zygote was started first)

        messages, _rest, broken = wire.split(stream)
        done = False
        for header, blob in messages:
            module = header.get("module")
            if header.get("type") == "reference" and module in found:
                found[module][header["check"]] = wire.decode_outputs(header["outputs"], blob)
                cpu[module][header["check"]] = float(header["cpu"])
            elif header.get("type") == "reference-cpu" and module in found:
                cpu[module][header["check"]] = float(header["cpu"])  # its verdict reads none
            elif header.get("type") == "reference-error" and module in found:
                errors[module] = str(header.get("error"))
            done = done or header.get("type") == "done"
        if done and ended:
            self._idle.put((server, pid))
        else:  # the server died or ran past `timeout`: what is missing is an error
            self._stop_server(pid)
            why = broken or "the process computing them stopped before it finished"
            for module in modules:
                errors.setdefault(module, f"reference outputs not computed ({why})")
        return {m: r for m, r in found.items() if m not in errors}, cpu, errors

    def _stop_server(self, pid: int) -> None:
        server = self._servers.pop(pid, None)
        if server is not None:
            server.close()
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self, kill: bool = False) -> None:
        """Stop the zygote: it ends when it reads the closed socket (after its start-up);
        `kill`: now (a grader that gives up before grading anything)."""
        for pid in list(self._servers):  # a server ends when its socket closes; killed here
            self._stop_server(pid)
        while not self._early.empty():  # never asked for: it ends when its socket closes
            self._early.get_nowait().close()
        if self.sock.fileno() >= 0:
            self.sock.close()
            if kill:
                self.process.kill()
            self.process.wait()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(
    fd: int, warm_up: bool, servers: Sequence[int] = (), kinds: Sequence[str] | None = None
) -> None:
    """The zygote's interpreter: torch and the base of the probe side, then serve;
    `servers`: sockets to fork a reference server on, once torch is warm; `kinds`: the
    warm-ups to pay, None for every kind (Zygote)."""
    import torch

    from .. import probing, submission  # noqa: F401  (what the sandboxed process runs from)
    from . import child, relay, wire  # noqa: F401  (what its forks run)

    torch.set_num_threads(1)
    seccomp_module()  # load libseccomp now: the sandbox's file view has no ldconfig
    sock = socket.socket(fileno=fd)
    code = 0
    try:
        _serve(sock, warm_up, servers, kinds)
    except BaseException:
        code = 1
    os._exit(code)


def _serve(
    sock: socket.socket,
    warm_up: bool,
    servers: Sequence[int],
    kinds: Sequence[str] | None = None,
) -> None:
    """The pre-fork server (forkserver.py) with what only the sandbox needs: nothing of the
    grader's environment, command line or memory in any fork (the hidden seed sealed away),
    and each fork the trusted monitor of one confined process (or a reference server)."""
    from .. import limits

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    server = ForkServer(reap_all=True)  # monitors and reference servers: the kernel reaps them
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd > 2 and fd != sock.fileno() and fd not in servers and fd != server.sel.fileno():
            try:
                os.close(fd)
            except OSError:
                pass
    # Nothing of the grader's environment or command line reaches a fork of this process.
    scrub_process_memory()
    os.environ.clear()
    os.environ.update(SAFE_ENV)
    # Pay torch's lazy first-use work once, here, not per submission: torch's own and the
    # kinds the graded modules' probes declare (every kind unless told). The reference
    # servers asked for early are forked before matplotlib's: only plots' probes draw, and
    # no verdict of plots reads a reference. (The meta device's first use imports torch's
    # compiler stack, as torch.optim's first does.)
    wanted = [k for k in (limits.WARM_UPS if kinds is None else kinds) if k in limits.WARM_UPS]
    if warm_up:
        server.warm(*[kind for kind in wanted if kind != "matplotlib"])
    for i, fd in enumerate(servers):
        server.fork(partial(_reference_server, fd, servers[i + 1 :]), close=[sock])
        os.close(fd)
    if warm_up:
        server.warm(*wanted)
    server.ready()  # fewer copy-on-write pages in every fork

    def request(_sock: socket.socket) -> None:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 8)
        except OSError:
            data, fds = b"", []
        if not data:
            server.stop()  # the parent closed its end
            return
        try:
            server.fork(partial(_forked, json.loads(data), fds), close=[sock])
        finally:
            for fd in fds:
                os.close(fd)

    server.watch(sock, request)
    server.serve()


def _forked(request: dict[str, Any], fds: list[int]) -> int:
    """A fork of the zygote, for one request: a reference server (trusted, never confined),
    or the monitor of one submission's sandboxed process."""
    if request.get("verb") == "reference-server":
        _reference_server(fds[0], [])  # never returns
    try:
        _monitor(request, *fds)
    except BaseException:
        try:  # the parent marks the student "not graded", never blames them
            error = traceback.format_exc()[-1500:]
            os.write(fds[2], json.dumps({"monitor_error": error}).encode())
        except BaseException:
            pass
        return 1
    return 0


def _reference_server(fd: int, others: Iterable[int]) -> None:
    """In a fresh fork of the zygote (its socket closed): serve references on `fd`; `others`:
    the zygote's descriptors of the servers not forked yet, closed here."""
    for other in others:
        os.close(other)
    importlib.import_module(REFERENCE_FORK).serve(fd)  # never returns


def _monitor(request: dict[str, Any], channel: int, output: int, status: int) -> None:
    """Trusted: put the sandboxed process in its cgroup (and PID namespace), enforce the wall
    clock, kill everything it left, report how it ended."""
    limits = Limits(**request["limits"])
    isolation = Isolation(**request["isolation"])
    started = time.monotonic()
    report: dict[str, Any] = {}
    libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans come back here to be reaped
    cgroup = {}
    try:
        if isolation.cgroup:
            cgroup = new_cgroup(isolation.cgroup, request["name"], limits)
        if isolation.namespaces:
            unshare_pid(userns=isolation.mode == "userns")
    except OSError as e:
        report = {"setup_error": f"the sandbox could not be set up ({e})"}
        os.write(status, json.dumps(report).encode())
        kill_cgroup(cgroup) if cgroup else None
        return
    go_read, go_write = os.pipe()
    setup_read, setup_write = os.pipe()
    watched, relayed = os.pipe()  # the sandboxed process's channel, read and relayed here
    from ..limits import Board

    board = Board()  # which exercise runs: read here once a check was stopped (relay.py)
    from .. import measure

    # A part of a measured check: its baseline is read here before any student code runs.
    handshake = measure.pipes() if request.get("measure") else None
    pid = os.fork()
    if pid == 0:
        os.close(status)
        os.close(go_write)
        os.close(setup_read)
        os.close(channel)
        os.close(watched)
        if handshake is not None:
            os.close(handshake[0])
            os.close(handshake[3])
        os.read(go_read, 1)  # wait until the monitor has put this process in its cgroup
        os.close(go_read)
        from . import child

        ends = (handshake[1], handshake[2]) if handshake is not None else None
        child.main(request, relayed, output, setup_write, board, ends)  # never returns
    for fd in (relayed, output, go_read, setup_write):
        os.close(fd)
    if handshake is not None:
        os.close(handshake[1])
        os.close(handshake[2])
    try:
        if cgroup:
            join_cgroup(cgroup, pid)
        os.write(go_write, b"1")
    except OSError as e:
        report["setup_error"] = f"the sandbox could not be set up ({e})"
        os.kill(pid, signal.SIGKILL)
    os.close(go_write)
    baseline = None
    if handshake is not None:  # the child waits until its baseline is read (measure.py)
        wait = min(float(request["stall"]), float(limits.timeout))
        baseline = measure.Baseline.take(pid, handshake[0], handshake[3], wait, cgroup or None)
    # CPU seconds per check, stopped from outside (relay.py); for the whole, the budget of
    # wall-clock seconds less the time the process waited for a CPU.
    cpu_limits = {str(k): float(v) for k, v in request["cpu_limits"].items()}
    from . import relay

    report.update(relay.follow(pid, watched, channel, cpu_limits, request["stall"], limits.timeout))
    timed_out = bool(report.pop("timed_out", False))
    _, wstatus, usage = os.wait4(pid, 0)
    if isinstance(report.get("stopped"), dict):  # where it was, for policy.charged
        report["stopped"]["board"] = board.values()
    board.close()
    if baseline is not None:  # what the child added, from the kernel's accounts
        charged = measure.cgroup_memory(cgroup or None)
        report["measured"] = baseline.measured(usage, charged[1] if charged else None)
    setup = os.read(setup_read, 1000)  # "ok", written before any student code ran
    os.close(setup_read)
    if setup != b"ok" and "setup_error" not in report:
        why = setup.decode("utf-8", "replace") or "the sandboxed process died while starting"
        report["setup_error"] = f"the sandbox could not be set up ({why})"
    if cgroup:
        report.update(kill_cgroup(cgroup))
    if request["uid"] is not None:
        sweep(request["uid"])
        if not isolation.namespaces:
            sweep_files(request["uid"])
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    report.update(
        timed_out=timed_out,
        exit_code=os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else None,
        signal=os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else None,
        seconds=round(time.monotonic() - started, 3),
        max_rss_mb=round(usage.ru_maxrss / 1024, 1),
    )
    os.write(status, json.dumps(report).encode())
    os.close(status)
