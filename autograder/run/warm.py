"""The warm grader behind `make grade`: torch imported once, each grading a fork of it.

A fresh `python -m autograder grade` spends most of its time before it grades anything:
importing torch and pytest, the kit's checks, and torch's lazy first uses (the meta device,
matplotlib). After a `make grade`, a small server (`python -m autograder.run.warm serve`) pays all
of that once, in the background, and waits on a Unix socket in build/. The next `make grade`
(this module's `client`, which imports nothing but the standard library) hands it its
arguments, working folder, environment and its own stdin, stdout and stderr; the server forks,
and the fork runs the same `cli.main` on them as the direct run would, printing straight to
the student's terminal, and ends with its exit status. Student code never runs in the
server: it runs in the fork's own workers (worker.py), and the fork ends with the grading.

The server serves one checkout of the kit as it is: a key made of the interpreter, the lock
files and .venv's install stamps, and the size and modification time of every file of the
package (checks, catalogs, fixtures) and of data/ is compared on each request; a different
key (the kit changed, a `git pull`, a new install) stops the server and the grading runs
directly. It answers only its own user (SO_PEERCRED), and exits after IDLE seconds without a
request. A grading on CUDA starts fresh. `make grade WARM=0` grades directly. The fork
writes in the encodings the client's terminal takes (a Latin-1 or GBK locale,
PYTHONIOENCODING=ascii: what they cannot show as ASCII), as a direct run does. The kit's
tests run their `grade` and `hint` commands on a warm grader of their own (tests/kit/
conftest.py), except where a test is about a fresh process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.settings import Settings, device_flag
from .forkserver import ForkServer, quiet_start

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
SOCKET = "warm-grader.sock"  # in the warm grader's folder (Settings.warm_dir: build/)
LOCK = "warm-grader.lock"
LOG = "warm-grader.log"  # one line per grading served
IDLE = 20 * 60  # seconds without a request before the server exits
VERBS = ("grade", "hint")  # what the warm grader runs; everything else starts directly
_HEADER = struct.Struct("!I")
# Linux: descriptors passed over the socket, the peer's uid, a pidfd per grading fork.
SUPPORTED = sys.platform == "linux" and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")


def folder(settings: Settings) -> Path:
    """Where the warm grader's socket, lock and log live: Settings.warm_dir, else build/."""
    return settings.warm_dir or ROOT / "build"


def flags(argv: list[str]) -> dict[str, str]:
    """The flags of `argv` the warm grader decides on before the CLI parses it: --warm
    (make grade's WARM=), as Settings.resolve's cli_args."""
    for i, arg in enumerate(argv):
        if arg == "--warm" and i + 1 < len(argv):
            return {"warm": argv[i + 1]}
        if arg.startswith("--warm="):
            return {"warm": arg.split("=", 1)[1]}
    return {}


def key() -> str:
    """The kit as the server loaded it: the interpreter, the lock files and .venv's install
    stamps, and every package and data file's size and modification time (a stat each, a few
    milliseconds)."""
    paths = [ROOT / "requirements.lock", ROOT / "requirements-instructor.lock"]
    paths += Path(sys.prefix).glob(".attention-lab-*installed")  # make venv's stamps
    for folder in (PACKAGE, ROOT / "data"):
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            paths += (Path(dirpath) / name for name in filenames)
    digest = hashlib.sha256(sys.executable.encode())
    for path in sorted(map(str, paths)):
        try:
            st = os.stat(path)
        except OSError:
            continue
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------- client


def client(argv: list[str], settings: Settings) -> int | None:
    """Run `argv` on the warm grader when one is up for this kit; None when it is not (the
    caller then grades directly and calls `start`)."""
    if not wanted(argv, settings):
        return None
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(folder(settings) / SOCKET))
    except OSError:
        return None
    with conn:
        if not _peer_is_us(conn):
            print(
                "A process of another user listens on the warm grader's socket "
                f"{folder(settings) / SOCKET}; grading without it.",
                file=sys.stderr,
            )
            return None  # nothing sent: not our environment, not our terminal
        # What its terminal shows (__main__: unicode_math.ascii_terminal decided it here)
        encodings = [getattr(s, "encoding", None) for s in (sys.stdout, sys.stderr)]
        request: dict[str, Any] = {"key": key(), "argv": argv, "cwd": os.getcwd()}
        request.update(env=dict(os.environ), encodings=encodings)
        data = json.dumps(request).encode()
        try:
            socket.send_fds(conn, [_HEADER.pack(len(data))], [0, 1, 2])
            conn.sendall(data)
            reply = _lines(conn)
            if next(reply, "") != "started":
                return None  # stale (the kit changed) or refused: grade directly
        except OSError:
            return None
        try:
            for line in reply:
                if line.startswith("exit "):
                    return int(line.split()[1])
        except KeyboardInterrupt:
            return 130  # closing the socket tells the server to interrupt the grading
        except (OSError, ValueError):
            pass
    print(
        "The warm grader stopped before the grading ended; `make grade WARM=0` grades without it.",
        file=sys.stderr,
    )
    return 1


def _lines(conn: socket.socket) -> Iterator[str]:
    buffer = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


def wanted(argv: list[str], settings: Settings) -> bool:
    """`make grade` (Settings.warm: WARM=1) of a verb the warm grader runs, on the CPU (CUDA
    cannot be used in a fork of a process that used it: a CUDA grading starts fresh)."""
    on_cpu = not device_flag(argv).startswith("cuda")
    verb = any(a in VERBS for a in argv)
    return SUPPORTED and settings.warm and on_cpu and verb


def start(argv: list[str], settings: Settings) -> None:
    """After a direct run of `argv`: start a server in the background for the next
    `make grade`, unless one is up or starting (it holds LOCK). Quiet: a kit that cannot
    start one grades directly."""
    where = folder(settings)
    if not wanted(argv, settings) or len(str(where / SOCKET)) > 100:
        return
    try:
        import fcntl

        where.mkdir(parents=True, exist_ok=True)
        with open(where / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no server holds it
        subprocess.Popen(
            [sys.executable, "-m", "autograder.run.warm", "serve", str(where)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return


# --------------------------------------------------------------------------- server


def serve(where: Path) -> None:
    """The server of the warm grader whose socket, lock and log are in `where`."""
    import fcntl

    where.mkdir(parents=True, exist_ok=True)
    lock = open(where / LOCK, "a")  # noqa: SIM115 (held for the server's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server is up or starting
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")  # for stop()
    lock.flush()
    try:
        os.close(os.pidfd_open(os.getpid()))  # a kernel older than 5.3 has none: no server
    except OSError:
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the finally below cleans up
    mine = key()
    server = ForkServer()
    threads = _warm()
    (where / SOCKET).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(str(where / SOCKET))
    finally:
        os.umask(old)
    listener.listen(8)

    def accept(_listener: socket.socket) -> None:
        conn, _ = listener.accept()
        server.last = time.monotonic()
        if _own_user(conn) and not _answer(conn, mine, threads, server, listener, where / LOG):
            server.stop()  # stale: the kit changed under this server

    server.watch(listener, accept)
    try:
        server.serve(idle=IDLE)
    finally:
        server.signal_all(signal.SIGINT)
        (where / SOCKET).unlink(missing_ok=True)
        listener.close()
        server.close()


def stop(where: Path) -> None:
    """End the warm grader of folder `where`, if one is up (its pid is in its lock file)."""
    try:
        pid = int((where / LOCK).read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return
    if b"autograder.run.warm" in cmdline:
        _signal(pid, signal.SIGTERM)


def _warm() -> int:
    """Import and warm what every grading needs; returns torch's thread count, to restore in
    each fork (the server itself stays on one thread, so that no OpenMP thread pool exists when
    it forks: a fork of a process with one hangs at its first parallel operation)."""
    from ..channels import cli
    from ..core import fixtures, i18n, registry
    from . import limits

    cli.verb_modules()  # every verb's module (the command line's parser), once for every fork
    threads = ForkServer.warm(*limits.WARM_UPS)
    registry.all_checks()
    for module in registry.modules():  # the public references, decoded once for every fork
        with contextlib.suppress(OSError, ValueError):
            fixtures.load(module)
    for lang in i18n.available():
        i18n.translations(lang)
    ForkServer.ready()
    return threads


def _peer_is_us(conn: socket.socket) -> bool:
    """Whether the process at the other end of `conn` runs as this user (SO_PEERCRED: the
    kernel's word, not the peer's). The client asks before it sends its environment and its
    terminal; the server asks before it takes a request."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _own_user(conn: socket.socket) -> bool:
    if not _peer_is_us(conn):
        conn.close()
        return False
    return True


def _answer(
    conn: socket.socket,
    mine: str,
    threads: int,
    server: ForkServer,
    listener: socket.socket,
    log_path: Path,
) -> bool:
    """Read one request; fork its grading (a line in `log_path`). False when the request is
    for another kit."""
    try:
        conn.settimeout(10)
        head, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
        (size,) = _HEADER.unpack(head)
        data = b""
        while len(data) < size:
            chunk = conn.recv(min(1 << 20, size - len(data)))
            if not chunk:
                raise OSError("short request")
            data += chunk
        request = json.loads(data)
        conn.settimeout(None)
    except (OSError, ValueError, struct.error):
        conn.close()
        return True
    try:
        if not isinstance(request, dict) or len(fds) != 3:
            conn.close()
            return True
        if request.get("key") != mine:
            conn.sendall(b"stale\n")
            conn.close()
            return False

        def done(status: int) -> None:  # the client waits for this line
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
            except OSError:
                pass
            server.unwatch(conn)
            conn.close()

        pid = server.fork(lambda: _child(request, fds, threads), close=[listener], on_exit=done)

        # the student pressed Ctrl-C: interrupt the grading
        def hangup(_conn: socket.socket) -> None:
            _signal(pid, signal.SIGINT)
            server.unwatch(conn)

        server.watch(conn, hangup)
        with open(log_path, "a") as log:
            log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {pid}: {request['argv']}\n")
        conn.sendall(b"started\n")  # from here on the fork grades: the client waits for it
        return True
    except OSError:
        return True  # the client left: its fork is reaped (and interrupted) as a hang-up
    finally:
        for fd in fds:
            os.close(fd)


def _child(request: dict[str, Any], fds: list[int], threads: int) -> int:
    """The fork that grades (ForkServer.fork): the student's stdin/stdout/stderr, folder and
    environment, then the same `cli.main` a direct run calls; its exit status."""
    code = 1
    try:
        os.setsid()
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
        from ..channels import cli

        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        # The client's encodings (a Latin-1 or GBK terminal, PYTHONIOENCODING=ascii), as the
        # direct run writes them: what they cannot show as ASCII, never a UnicodeEncodeError.
        sent = [*(request.get("encodings") or []), None, None][:2]
        cli.use_terminal([_encoding(e) for e in sent])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import torch

        from ..core import i18n

        torch.set_num_threads(threads)
        i18n.use(None)
        try:
            code = int(cli.main(list(request["argv"])) or 0)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except KeyboardInterrupt:
            code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def _encoding(name: object) -> str:
    """An encoding the client named, where Python has it; else UTF-8."""
    import codecs

    try:
        return codecs.lookup(name).name if isinstance(name, str) else "utf-8"
    except LookupError:
        return "utf-8"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        quiet_start()  # rare full collections while it imports (forkserver.py)
        serve(Path(sys.argv[2]))
    else:
        print("usage: python -m autograder.run.warm serve FOLDER", file=sys.stderr)
        sys.exit(2)
