"""Confine the process that runs student code: hidden paths, resource limits, no privileges.

What the sandboxed process gets, strongest first (`detect` picks what this machine allows):

    namespace  running as root with mount namespaces (Linux): the secret paths (solutions/,
               the kit's tests, .git, course/, the submissions and the grades) are covered
               by empty read-only tmpfs mounts in a private mount namespace, with no network;
               then the process drops to an unprivileged uid of its own (one per worker
               slot, so concurrent submissions cannot signal or read each other).
    uid        root, but no namespaces (a container without CAP_SYS_ADMIN): the same
               unprivileged uid; secret paths are safe only where that uid cannot read them
               (Gradescope's run_autograder makes them root-only first). `detect` says which
               are readable.
    userns     not root, unprivileged user namespaces: the mounts as above, same uid as the
               grader (submissions could signal each other).
    none       nothing of the above: only resource limits. A plain warning says so.

Every mode sets resource limits: address space (memory), processes, file size, CPU time,
core dumps, open files.
"""

from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 0x4000, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
UID_BASE = 64000  # sandbox uids: UID_BASE + worker slot (no passwd entry needed)


@dataclass
class Limits:
    timeout: float = 60.0  # wall-clock seconds for a whole submission
    check_timeout: float = 10.0  # seconds per check (at most the check's own limit)
    memory: int = 2 << 30  # bytes of address space beyond what the process already maps
    processes: int = 64  # processes and threads of the sandbox uid
    file_size: int = 16 << 20  # bytes per file written
    output: int = 8 << 10  # bytes of stdout/stderr kept (head and tail)


@dataclass
class Isolation:
    mode: str  # "namespace" | "uid" | "userns" | "none"
    hide: list[str] = field(default_factory=list)
    readable: list[str] = field(default_factory=list)  # hidden paths the sandbox can read
    # [blocking ancestor, path]: folders the sandbox uid needs (the interpreter, the venv,
    # the kit) behind an ancestor it may not traverse (/root is 0700): in the namespace
    # the ancestor is covered by a tmpfs and only the needed folder is bound back into it.
    expose: list[list[str]] = field(default_factory=list)

    @property
    def uses_uid(self) -> bool:
        return self.mode in ("namespace", "uid")

    def warning(self) -> str:
        """A plain sentence for the instructor when isolation is weaker than it should be."""
        if self.mode == "none":
            return (
                "warning: no sandbox isolation on this machine (no usable namespaces or "
                "unprivileged uid): student code runs with your user id and can read "
                "solutions/. Grade untrusted code as root with mount namespaces."
            )
        if self.readable:
            return (
                f"warning: no mount namespaces here ({self.mode} mode); student code can "
                f"read {', '.join(self.readable)}. Make them unreadable to other users "
                "(chmod -R go-rwx) or grade with mount namespaces (root, CAP_SYS_ADMIN)."
            )
        if self.mode == "userns":
            return (
                "note: not root: submissions run in user namespaces under your own user id; "
                "solutions/ is hidden, but submissions running at the same time are not "
                "isolated from each other."
            )
        return ""


_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _ok(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def unshare(userns: bool) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | (CLONE_NEWUSER if userns else 0)
    _ok(libc().unshare(flags), "unshare")
    if userns:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    _ok(libc().mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")


def hide(path: str) -> None:
    """Cover `path` in this mount namespace: an empty read-only tmpfs, or /dev/null."""
    target = path.encode()
    if os.path.isdir(path):
        flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        _ok(libc().mount(b"tmpfs", target, b"tmpfs", flags, b"size=4k,mode=0555"), path)
    elif os.path.exists(path):
        _ok(libc().mount(b"/dev/null", target, None, MS_BIND, None), path)


def set_limits(limits: Limits) -> None:
    mapped = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    cpu = int(limits.timeout) + 5
    for which, value in (
        (resource.RLIMIT_AS, mapped + limits.memory),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 256),
    ):
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def needed_paths() -> list[str]:
    """The folders the sandboxed process must read: the interpreter's, the packages', the kit's."""
    import sys

    found = {sys.base_prefix, sys.prefix, sys.exec_prefix, str(Path(__file__).parents[2])}
    found |= {p for p in sys.path if p and os.path.isdir(p)}
    return sorted({os.path.realpath(p) for p in found})


def blocked_by(path: str) -> str | None:
    """The first ancestor of `path` that other users may not traverse, or None."""
    current = "/"
    for part in Path(path).parts[1:]:
        if not os.stat(current).st_mode & 0o001:
            return current
        current = os.path.join(current, part)
    return None


def _expose(pairs: list[list[str]], mountpoints: str) -> None:
    staged = []
    for i, (_blocker, path) in enumerate(pairs):
        point = os.path.join(mountpoints, str(i))
        os.makedirs(point, exist_ok=True)
        _ok(libc().mount(path.encode(), point.encode(), None, MS_BIND | MS_REC, None), path)
        staged.append(point)
    for blocker in sorted({b for b, _ in pairs}):
        _ok(libc().mount(b"tmpfs", blocker.encode(), b"tmpfs", 0, b"size=64k,mode=0755"), blocker)
    for point, (_blocker, path) in zip(staged, pairs, strict=True):
        os.makedirs(path, mode=0o755, exist_ok=True)
        _ok(libc().mount(point.encode(), path.encode(), None, MS_BIND | MS_REC, None), path)


def enter(isolation: Isolation, uid: int | None, limits: Limits, mountpoints: str = "") -> None:
    """Confine this (freshly forked) process. Raises OSError if a step that `detect`
    promised fails: the caller must then not run student code."""
    if isolation.mode in ("namespace", "userns"):
        unshare(userns=isolation.mode == "userns")
        for path in isolation.hide:
            hide(path)
        if isolation.expose and uid is not None:
            _expose(isolation.expose, mountpoints)
    set_limits(limits)
    if isolation.uses_uid and uid is not None:
        drop_privileges(uid)
    libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def sweep(uid: int) -> None:
    """Kill every process left running under the sandbox uid (spawned and escaped ones)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, 9)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def _try(fn) -> int:
    """Run fn in a forked process; its exit status (0 = it worked)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = fn() or 0
        except BaseException:
            code = 1
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def detect(hide_paths: list[Path], probe_uid: int = UID_BASE) -> Isolation:
    """What isolation this machine allows, tried in forked processes."""
    paths = sorted({str(Path(p).resolve()) for p in hide_paths if Path(p).exists()})
    root = os.geteuid() == 0

    def mounts(userns: bool):
        def attempt():
            unshare(userns)
            for p in paths:
                hide(p)
            return 0 if not any(os.listdir(p) for p in paths if os.path.isdir(p)) else 1

        return attempt

    blocked = [[b, p] for p in needed_paths() if (b := blocked_by(p))]
    # Nested needs under one blocker: binding the outermost is enough.
    blocked = [
        [b, p] for b, p in blocked if not any(p != q and p.startswith(q + "/") for _, q in blocked)
    ]
    if root and _try(mounts(False)) == 0:
        return Isolation("namespace", paths, expose=blocked)
    if root and blocked:  # no namespaces, and the sandbox uid could not start Python
        return Isolation("none", [], readable=paths)
    if not root and _try(mounts(True)) == 0:
        return Isolation("userns", paths)
    mode = "uid" if root else "none"

    def can_read(p: str):
        def attempt():
            if root:
                drop_privileges(probe_uid)
            if os.path.isdir(p):
                for dirpath, _dirs, files in os.walk(p):
                    for name in files:
                        with open(os.path.join(dirpath, name), "rb") as f:
                            f.read(1)
                        return 0
                return 1
            with open(p, "rb") as f:
                f.read(1)
            return 0

        return attempt

    readable = [p for p in paths if _try(can_read(p)) == 0]
    return Isolation(mode, [], readable)
