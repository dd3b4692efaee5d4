"""Confine the process that runs student code. Fail closed: `detect` refuses to grade
(SandboxUnavailable, naming what is missing) unless the instructor passes --insecure.

What the sandboxed process gets (`detect` picks the mode this machine allows):

    namespace  root with CAP_SYS_ADMIN (make batch as root, a privileged container): new
               mount, PID, network, IPC and UTS namespaces; a file view by allow-list (a
               fresh tmpfs root holding read-only binds of the interpreter and its packages,
               the graded module's view of the kit (view.py, bound where autograder/ is)
               and the submission; a private size-capped /tmp
               and /dev/shm, a minimal /dev, its own /proc; nothing else of the machine);
               then an unprivileged uid allocated for this run under a lock.
    userns     not root, unprivileged user namespaces: the same namespaces and view, the
               grader's own uid outside (the PID namespace keeps submissions apart).
    uid        root without namespaces (a Gradescope container without CAP_SYS_ADMIN): an
               unprivileged uid; refused unless every secret path (the kit's autograder/
               package among them: the sandboxed process imports from the module's staged
               view instead) is unreadable to it (the Gradescope run_autograder makes them
               root-only) and the interpreter readable.
    none       nothing above: refused unless --insecure.

Every mode adds: a cgroup per sandbox where the machine lets us (v2, else v1: a memory limit
that counts tmpfs pages, a pids limit, an equal CPU weight; killing through the cgroup;
required for batch grading), resource limits (address space, processes, file size, CPU
seconds, no core dumps, open files), an environment allow-list, and a seccomp filter
(libseccomp through pyseccomp) refusing unshare, mount, ptrace, bpf, keyctl,
perf_event_open, io_uring and the like, after no_new_privs.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import importlib
import os
import platform
import pwd
import resource
import secrets
import shutil
import signal
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...core.settings import Settings

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 0x4000, 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 38, 36
# Sandbox uids (no passwd entry needed). The kit's first sandbox used 64000 + slot without
# a lock; starting above that range keeps a run of it from killing ours and ours from it.
UID_BASE, UID_COUNT = 64100, 3900
LOCK_DIRS = ("/run/attention-lab", "/var/lock/attention-lab")
KIT = Path(__file__).resolve().parents[2]  # the autograder/ package (never bound whole)
# What every allow-listed view holds besides the interpreter and the graded module's view.
SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")
DEVICES = ("null", "zero", "full", "random", "urandom")
# Refused by the seccomp filter (EPERM): namespaces and mounts, debugging other processes,
# kernel interfaces student code has no business with.
DENIED_SYSCALLS = (
    "unshare setns mount umount2 pivot_root chroot move_mount open_tree fsopen fsmount "
    "fsconfig fspick mount_setattr ptrace process_vm_readv process_vm_writev kcmp "
    "pidfd_getfd bpf keyctl add_key request_key perf_event_open userfaultfd kexec_load "
    "kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct "
    "settimeofday clock_settime clock_adjtime adjtimex quotactl open_by_handle_at "
    "name_to_handle_at lookup_dcookie fanotify_init syslog vhangup iopl ioperm uselib "
    "io_uring_setup io_uring_enter io_uring_register"
).split()
SAFE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "CUDA_VISIBLE_DEVICES": "",  # the sandbox grades on the CPU: no GPU to reach
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@dataclass
class Limits:
    timeout: float = 60.0  # seconds a whole submission's processes run or block (relay.follow)
    memory: int = 2 << 30  # bytes: the cgroup's limit (tmpfs pages count), and address space
    processes: int = 64  # processes and threads of one sandbox
    file_size: int = 16 << 20  # bytes per file written
    output: int = 8 << 10  # bytes of stdout/stderr kept (head and tail)
    tmp_size: int = 64 << 20  # bytes of the private /tmp, and again of /dev/shm

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        """The defaults, with the run's settings where given: timeout (seconds per
        submission), memory_mb (MiB). A check's CPU seconds are not the sandbox's: they are
        the run's limits.TimeLimits (TimeLimits.of), the same in every channel."""
        limits = cls()
        if settings.timeout is not None:
            limits.timeout = settings.timeout
        if settings.memory_mb is not None:
            limits.memory = int(settings.memory_mb) << 20
        return limits


class SandboxUnavailable(Exception):
    """Isolation cannot be set up here: the message says what is missing."""


@dataclass
class Isolation:
    mode: str  # "namespace" | "userns" | "uid" | "none"
    view: list[str] = field(default_factory=list)  # allow-listed paths (namespace modes)
    hide: list[str] = field(default_factory=list)  # secret paths (for the uid mode's check)
    readable: list[str] = field(default_factory=list)  # secret paths the sandbox can read
    # {"version": 1|2, "dirs": {ctrl: run dir}}
    cgroup: dict[str, Any] = field(default_factory=dict)
    seccomp: bool = False
    missing: list[str] = field(default_factory=list)  # what is missing (with --insecure)
    insecure: bool = False

    @property
    def uses_uid(self) -> bool:
        return self.mode in ("namespace", "uid")

    @property
    def namespaces(self) -> bool:
        return self.mode in ("namespace", "userns")

    def summary(self) -> str:
        parts = [self.mode]
        if self.cgroup:
            parts.append(f"cgroup v{self.cgroup['version']}")
        if self.seccomp:
            parts.append("seccomp")
        return ", ".join(parts)

    def warning(self) -> str:
        """The line every result shows when grading ran with --insecure ('' otherwise)."""
        if not self.insecure:
            return ""
        missing = "; ".join(self.missing) if self.missing else "nothing detected missing"
        return (
            f"INSECURE: graded with --insecure, without full isolation (missing: {missing}). "
            "Student code could read secrets or affect other submissions."
        )


# --------------------------------------------------------------------------- system calls

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _ok(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    def enc(v: str | None) -> bytes | None:
        return v.encode() if v is not None else None

    _ok(libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _pivot_root_nr() -> int:
    try:
        import pyseccomp

        return int(pyseccomp.resolve_syscall(pyseccomp.system_arch(), "pivot_root"))
    except Exception:
        return {"x86_64": 155, "aarch64": 41}[platform.machine()]


def unshare_pid(userns: bool) -> None:
    """In the monitor, before it forks the sandboxed process: that process will be PID 1 of
    a new PID namespace (and, without root, root of a new user namespace)."""
    if userns:
        uid, gid = os.getuid(), os.getgid()
        _ok(libc().unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare(user, pid)")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    else:
        _ok(libc().unshare(CLONE_NEWPID), "unshare(pid)")


# --------------------------------------------------------------------------- the file view


def needed_paths() -> list[str]:
    """The interpreter's folders and its packages', each as written and resolved: only
    what is under a prefix or named site-packages / dist-packages (never the kit's root,
    '' or a folder a PYTHONPATH added: the modules from there were imported already)."""
    prefixes = {sys.base_prefix, sys.prefix, sys.exec_prefix}
    found = set(prefixes)
    for p in sys.path:
        if p and os.path.isdir(p):
            inside = any(p == q or p.startswith(q.rstrip("/") + "/") for q in prefixes)
            if inside or Path(p).name in ("site-packages", "dist-packages"):
                found.add(p)
    found |= {os.path.realpath(p) for p in found}
    return sorted(os.path.abspath(p) for p in found)


def view_paths() -> list[str]:
    paths = {p for p in SYSTEM_PATHS + SYSTEM_FILES if os.path.lexists(p)}
    paths |= set(needed_paths())
    ordered = sorted(paths, key=lambda p: (p.count("/"), p))
    kept: list[str] = []
    # A path inside one already placed is visible through it (through a link: its
    # resolved form is in the set too); binding it again would follow the link out.
    for p in ordered:
        if not any(p.startswith(q.rstrip("/") + "/") for q in kept):
            kept.append(p)
    return kept


def _bind(source: str, target: str, root: str, writable: bool = False) -> None:
    """Bind `source` read-only (`writable`: read-write) at root+target (a symlink is copied
    as a symlink)."""
    dest = root + target
    if os.path.islink(source):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            os.symlink(os.readlink(source), dest)
        return
    if os.path.isdir(source):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.exists(dest):
            open(dest, "w").close()
    _mount(source, dest, None, MS_BIND | MS_REC)
    kept = os.statvfs(source).f_flag & (MS_NOEXEC | MS_NOSUID | MS_NODEV | 1024 | 2048)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | kept | (0 if writable else MS_RDONLY)
    _mount(None, dest, None, flags)


def kit_inside(view: list[str]) -> list[str]:
    """The view paths that hold the kit's autograder/ package (there must be none)."""
    kit = {str(KIT), os.path.realpath(KIT)}
    return [p for p in view if any(k == p or k.startswith(p.rstrip("/") + "/") for k in kit)]


def build_view(
    root: str,
    view: list[str],
    submission: tuple[str, str],
    limits: Limits,
    uid: int | None,
    kit: str,
    writable: Iterable[tuple[str, str]] = (),
) -> None:
    """Make root (an empty folder) the sandbox's whole file system, then pivot into it.
    `kit`: the graded module's staged view of autograder/, bound where the package is.
    `writable`: (source, seen as) folders bound read-write, last (nbgrader's confined
    kernel: its scratch copy of the notebook's folder, the folder of its sockets)."""
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for folder in ("/tmp", "/dev/shm"):  # first: a view path may lie under /tmp
        os.makedirs(root + folder, exist_ok=True)
        opts = f"size={limits.tmp_size},mode=1777,nr_inodes=4096"
        _mount("tmpfs", root + folder, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    for path in view:
        _bind(path, path, root)
    source, seen_as = submission
    _bind(source, seen_as, root)
    for seen_as in sorted({str(KIT), os.path.realpath(KIT)}):
        _bind(kit, seen_as, root)
    for source, seen_as in writable:
        _bind(source, seen_as, root, writable=True)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            dest = f"{root}/dev/{name}"
            open(dest, "w").close()
            _mount(f"/dev/{name}", dest, None, MS_BIND)
    os.makedirs(root + "/etc", exist_ok=True)
    who = uid if uid is not None else 0
    _write(root + "/etc/passwd", f"student:x:{who}:{who}:student:/tmp:/bin/false\n")
    _write(root + "/etc/group", f"student:x:{who}:\n")
    os.makedirs(root + "/proc", exist_ok=True)
    try:  # our own PID namespace's /proc: only the sandbox's processes
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # (a container that masks /proc): no /proc at all rather than the machine's
    os.chdir(root)
    _ok(libc().syscall(_pivot_root_nr(), b".", b"."), "pivot_root")
    _ok(libc().umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# --------------------------------------------------------------------------- cgroups


def _cgroup_mounts() -> list[tuple[str, str, set[str]]]:
    """(fstype, mount point, v1 controllers) of the cgroup file systems mounted here."""
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                _dev, point, fstype, opts = line.split()[:4]
                if fstype in ("cgroup", "cgroup2"):
                    found.append((fstype, point, set(opts.split(","))))
    except OSError:
        pass
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy: {'': v2 path, 'memory': v1 path, ...}."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _n, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                own[c] = path
    return own


def _v2_base() -> str | None:
    own = _own_cgroups()
    for fstype, point, _opts in _cgroup_mounts():
        if fstype != "cgroup2" or "" not in own:
            continue
        base = point + own[""].rstrip("/")
        try:
            available = open(f"{base}/cgroup.controllers").read().split()
        except OSError:
            continue
        if {"memory", "pids"} <= set(available):
            wanted = [c for c in ("memory", "pids", "cpu") if c in available]
            try:
                _write(f"{base}/cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
            except OSError:
                continue  # processes in our own cgroup (no delegation): not usable
            return base
    return None


def _v1_bases() -> dict[str, str] | None:
    own = _own_cgroups()
    bases: dict[str, str] = {}
    for fstype, point, opts in _cgroup_mounts():
        for ctrl in ("memory", "pids", "cpu"):
            if fstype == "cgroup" and ctrl in opts and ctrl in own and ctrl not in bases:
                bases[ctrl] = point + own[ctrl].rstrip("/")
    return bases if {"memory", "pids"} <= set(bases) else None


def _remove_stale(base: str) -> None:
    """Remove the (empty) cgroups of runs whose grader is gone (killed before clean-up)."""
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        parts = entry.split("-")
        if len(parts) != 4 or parts[:2] != ["attention", "lab"] or not parts[2].isdigit():
            continue
        if os.path.exists(f"/proc/{parts[2]}"):
            continue
        run = f"{base}/{entry}"
        for sub in os.listdir(run) if os.path.isdir(run) else []:
            if os.path.isdir(f"{run}/{sub}"):
                remove_cgroups({"s": f"{run}/{sub}"}, tries=1)
        remove_cgroups({"run": run}, tries=1)


def setup_cgroups() -> dict[str, Any]:
    """A cgroup folder for this run, per hierarchy (v2 preferred): {} if none is usable.
    The caller removes them with remove_cgroups."""
    name = f"attention-lab-{os.getpid()}-{secrets.token_hex(3)}"
    v2 = _v2_base()
    candidates = [(2, {"unified": v2})] if v2 else []
    v1 = _v1_bases()
    if v1:
        candidates.append((1, v1))
    for _version, bases in candidates:
        for base in bases.values():
            _remove_stale(base)
    for version, bases in candidates:
        made = {}
        try:
            for ctrl, base in bases.items():
                path = f"{base}/{name}"
                os.mkdir(path, 0o700)
                made[ctrl] = path
            if version == 2:
                ctrls = open(f"{made['unified']}/cgroup.controllers").read().split()
                on = " ".join(f"+{c}" for c in ("memory", "pids", "cpu") if c in ctrls)
                _write(f"{made['unified']}/cgroup.subtree_control", on)
            elif "memory" in made and os.path.exists(f"{made['memory']}/memory.use_hierarchy"):
                try:
                    _write(f"{made['memory']}/memory.use_hierarchy", "1")
                except OSError:
                    pass
            return {"version": version, "dirs": made}
        except OSError:
            remove_cgroups(made)
    return {}


def remove_cgroups(dirs: dict[str, Any], tries: int = 50) -> None:
    for path in dirs.values():
        for _ in range(tries):
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


def new_cgroup(cgroup: dict[str, Any], name: str, limits: Limits) -> dict[str, str]:
    """One sandbox's cgroup under the run's (the monitor calls this; root)."""
    made = {}
    try:
        for ctrl, base in cgroup["dirs"].items():
            path = f"{base}/{name}"
            os.mkdir(path, 0o700)
            made[ctrl] = path
        if cgroup["version"] == 2:
            d = made["unified"]
            _write(f"{d}/memory.max", str(limits.memory))
            if os.path.exists(f"{d}/memory.swap.max"):
                _write(f"{d}/memory.swap.max", "0")
            _write(f"{d}/pids.max", str(limits.processes))
            if os.path.exists(f"{d}/cpu.weight"):
                _write(f"{d}/cpu.weight", "100")
        else:
            _write(f"{made['memory']}/memory.limit_in_bytes", str(limits.memory))
            if os.path.exists(f"{made['memory']}/memory.memsw.limit_in_bytes"):
                _write(f"{made['memory']}/memory.memsw.limit_in_bytes", str(limits.memory))
            _write(f"{made['pids']}/pids.max", str(limits.processes))
            if "cpu" in made:
                _write(f"{made['cpu']}/cpu.shares", "1024")
    except OSError:
        remove_cgroups(made)
        raise
    return made


def join_cgroup(dirs: dict[str, str], pid: int) -> None:
    for path in dirs.values():
        _write(f"{path}/cgroup.procs", str(pid))


def _pids_in(dirs: dict[str, str]) -> list[int]:
    pids = set()
    for path in dirs.values():
        try:
            pids |= {int(p) for p in open(f"{path}/cgroup.procs").read().split()}
        except OSError:
            pass
    return sorted(pids)


def kill_cgroup(dirs: dict[str, str]) -> dict[str, Any]:
    """Kill every process in the sandbox's cgroup, read how it ended, remove the cgroup."""
    info = {}
    unified = dirs.get("unified")
    if unified and os.path.exists(f"{unified}/cgroup.kill"):
        try:
            _write(f"{unified}/cgroup.kill", "1")
        except OSError:
            pass
    for _ in range(200):
        pids = _pids_in(dirs)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        time.sleep(0.01)
    try:
        if unified:
            events = dict(
                line.split() for line in open(f"{unified}/memory.events").read().splitlines()
            )
            info["oom_kills"] = int(events.get("oom_kill", 0))
            if os.path.exists(f"{unified}/memory.peak"):
                info["peak_mb"] = int(open(f"{unified}/memory.peak").read()) >> 20
        elif "memory" in dirs:
            d = dirs["memory"]
            info["oom_kills"] = int(open(f"{d}/memory.failcnt").read())
            for line in open(f"{d}/memory.oom_control").read().splitlines():
                if line.startswith("oom_kill "):
                    info["oom_kills"] = int(line.split()[1])
            info["peak_mb"] = int(open(f"{d}/memory.max_usage_in_bytes").read()) >> 20
    except (OSError, ValueError):
        pass
    remove_cgroups(dirs)
    return info


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --------------------------------------------------------------------------- uids


class UidPool:
    """Sandbox uids for this run, each held by a lock file for the run's lifetime (a lock
    dies with its process): two runs on one machine never share a uid. A uid with a
    passwd entry or with processes running (not ours: a run that crashed, another tool)
    is skipped, never swept."""

    def __init__(self, count: int):
        self.uids: list[int] = []
        self._fds: list[int] = []
        folder = _lock_dir()
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            if len(self.uids) == count:
                break
            fd = os.open(f"{folder}/uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            if _processes_of(uid) or _has_account(uid):  # someone else's: never kill them
                os.close(fd)
                continue
            self.uids.append(uid)
            self._fds.append(fd)
        if len(self.uids) < count:
            self.close()
            raise SandboxUnavailable(f"no free sandbox uid left in {folder}")

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds, self.uids = [], []


def _has_account(uid: int) -> bool:

    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _lock_dir() -> str:
    for folder in LOCK_DIRS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise SandboxUnavailable(f"cannot create a lock folder for sandbox uids ({LOCK_DIRS[0]})")


def sweep(uid: int) -> None:
    """Kill every process running under `uid` (spawned, escaped, double-forked ones),
    again until none is left."""
    for _ in range(50):
        if not _processes_of(uid):
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        _reap()
        time.sleep(0.01)


def release(uids: UidPool | None, isolation: Isolation | None) -> None:
    """Free what a run of sandboxes held, when it closes (the batch and Gradescope Sandbox,
    nbgrader's ConfinedKernels): kill every process left under its uids, give the uids back
    (their lock files), remove its cgroups."""
    if uids:
        for uid in uids.uids:
            sweep(uid)
        uids.close()
    if isolation is not None:
        remove_cgroups(isolation.cgroup.get("dirs", {}))


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def sweep_files(uid: int, folders: Iterable[str] = ("/tmp", "/var/tmp", "/dev/shm")) -> None:
    """Remove what `uid` left in the shared temporary folders (modes without a private
    /tmp): the next student on that uid must not read it."""

    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


# --------------------------------------------------------------------------- the child side


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


def seccomp_module() -> types.ModuleType | None:
    """The libseccomp binding, or None (pyseccomp missing, or libseccomp2 not installed)."""
    try:
        return importlib.import_module("pyseccomp")
    except Exception:
        return None


def load_seccomp() -> None:
    sc = seccomp_module()
    if sc is None:
        raise OSError(errno.ENOSYS, "seccomp: pyseccomp / libseccomp2 missing")
    f = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            f.add_rule(deny, name)
        except Exception:
            pass  # a system call this architecture does not have
    # clone() with a namespace flag; clone3 passes its flags in memory, which a filter
    # cannot read: ENOSYS makes the C library fall back to clone().
    for bit in range(32):
        flag = 1 << bit
        if flag & (NAMESPACES | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWCGROUP):
            f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    try:
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except Exception:
        pass
    f.load()  # libseccomp sets no_new_privs first


def clean_environment(home: str) -> None:
    os.environ.clear()
    os.environ.update(SAFE_ENV, HOME=home, TMPDIR=home)


def enter(isolation: Isolation, request: dict[str, Any], limits: Limits) -> None:
    """Confine this freshly forked process (in the namespace modes, PID 1 of its own PID
    namespace). Raises OSError if a step fails: the caller must then not run student code."""
    uid = request["uid"]
    if isolation.namespaces:
        _ok(libc().unshare(NAMESPACES), "unshare")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        source = (request["submission_source"], request["submission"])
        writable = [(str(a), str(b)) for a, b in request.get("writable", ())]
        build_view(request["root"], isolation.view, source, limits, uid, request["kit"], writable)
    else:  # the real package is root-only here: import the rest from the staged view
        use_kit(request["kit"])
    importlib.invalidate_caches()  # the zygote's listings of autograder/ are not this view's
    set_limits(limits)
    if isolation.uses_uid and uid is not None:
        drop_privileges(uid)
    libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if isolation.seccomp:
        load_seccomp()


def use_kit(kit: str) -> None:
    """Import the kit's modules not loaded yet from `kit` (a staged view of autograder/)."""
    real = (str(KIT), os.path.realpath(KIT))
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "autograder" or not hasattr(module, "__path__"):
            continue
        moved = []
        for folder in module.__path__:
            for k in real:
                if folder == k or folder.startswith(k + "/"):
                    folder = kit + folder[len(k) :]
                    break
            moved.append(folder)
        module.__path__ = moved


def scrub_process_memory() -> None:
    """Zero this process's command line and initial environment (what /proc/PID/cmdline
    and /proc/PID/environ show): the zygote does it once, so no fork inherits them."""
    try:
        fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
        # Fields 48-51 of stat (1-based): arg_start arg_end env_start env_end.
        arg_start, arg_end, env_start, env_end = (int(x) for x in fields[45:49])
        for start, end in ((env_start, env_end), (arg_start + 1, arg_end)):
            if 0 < start < end:
                ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        pass


# --------------------------------------------------------------------------- detection


def _try(fn: Callable[[], int]) -> int:
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


def _namespaces_work(userns: bool) -> bool:
    def attempt() -> int:
        unshare_pid(userns)
        inner = os.fork()
        if inner == 0:
            code = 1
            try:
                _ok(libc().unshare(NAMESPACES), "unshare")
                _mount(None, "/", None, MS_REC | MS_PRIVATE)
                _mount("tmpfs", "/tmp", "tmpfs", 0, "size=4k")
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                code = 0 if os.getpid() == 1 else 1
            finally:
                os._exit(code)
        return os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1])

    return _try(attempt) == 0


def _seccomp_works() -> bool:
    def attempt() -> int:
        load_seccomp()
        return 0 if libc().unshare(CLONE_NEWUSER) != 0 else 1

    return _try(attempt) == 0


def blocked_by(path: str) -> str | None:
    """The first ancestor of `path` that other users may not traverse, or None."""
    current = "/"
    for part in Path(path).parts[1:]:
        if not os.stat(current).st_mode & 0o001:
            return current
        current = os.path.join(current, part)
    return None


def _uid_works(uid: int) -> bool:
    """Whether this process can become `uid` (no second uid in a user namespace that maps
    root alone, or without CAP_SETUID)."""

    def attempt() -> int:
        drop_privileges(uid)
        return 0 if os.getresuid() == (uid, uid, uid) else 1

    return _try(attempt) == 0


def _readable_by(uid: int, p: str) -> bool:
    """Whether `uid` can read `p` (or a file under it). Fails closed: True when the check
    itself could not run as `uid`."""

    def attempt() -> int:
        try:
            drop_privileges(uid)
        except OSError:
            return 0
        if os.path.isdir(p):
            for dirpath, _dirs, files in os.walk(p):
                for name in files:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        f.read(1)
                    return 0
            os.listdir(p)
            return 0
        with open(p, "rb") as f:
            f.read(1)
        return 0

    return _try(attempt) == 0


def detect(
    hide_paths: list[Path],
    *,
    need_cgroups: bool,
    insecure: bool = False,
    probe_uid: int | None = None,
    mode: str = "",
) -> Isolation:
    """What isolation this machine allows. Raises SandboxUnavailable naming what is missing,
    unless `insecure`: then the isolation says what is missing, for every result to show.
    `mode` "uid" (Settings.sandbox_mode) grades as if this machine had no namespaces."""
    secret = sorted({str(Path(p).resolve()) for p in hide_paths if Path(p).exists()})
    root = os.geteuid() == 0
    missing: list[str] = []
    iso = Isolation("none", hide=secret)
    # mode "uid" grades as if this machine had no namespaces (what a Gradescope container
    # without CAP_SYS_ADMIN gets): it can only lower the isolation.
    namespaces = mode != "uid"
    if namespaces and root and _namespaces_work(userns=False):
        iso.mode = "namespace"
    elif namespaces and not root and _namespaces_work(userns=True):
        iso.mode = "userns"
    elif root:
        iso.mode = "uid"
        uid = probe_uid if probe_uid is not None else UID_BASE + UID_COUNT - 1
        # The kit itself is a secret here: the sandboxed process imports from its staged
        # view (in the temporary folder), never from autograder/.
        secret = sorted(set(secret) | {str(KIT)})
        iso.hide = secret
        reach = needed_paths() + [tempfile.gettempdir()]
        blocked = sorted({b for p in reach if (b := blocked_by(p))})
        if blocked:
            missing.append(
                "mount namespaces (CAP_SYS_ADMIN) to show the interpreter and the kit to an "
                f"unprivileged uid: they are behind {', '.join(blocked)}, which other users "
                "cannot enter"
            )
        if not _uid_works(uid):
            missing.append(
                f"a second uid: this process cannot become uid {uid} (a user namespace "
                "that maps root alone, or no CAP_SETUID), so student code would run as root"
            )
        else:
            iso.readable = [p for p in secret if _readable_by(uid, p)]
        if iso.readable:
            missing.append(
                "mount namespaces (CAP_SYS_ADMIN) to hide "
                f"{', '.join(iso.readable)}, which an unprivileged uid can read "
                "(make them root-only: chmod -R go-rwx)"
            )
    else:
        missing.append(
            "a way to confine student code: neither root (for an unprivileged sandbox uid) "
            "nor unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
        )
    if iso.namespaces:
        iso.view = view_paths()
        if kit_inside(iso.view):
            missing.append(
                f"a file view without the whole kit: {', '.join(kit_inside(iso.view))} (the "
                f"interpreter's folders) hold(s) {KIT}; install the interpreter elsewhere"
            )
    if seccomp_module() is None:
        missing.append(
            "a seccomp filter: the Python package pyseccomp (in requirements.lock) and the "
            "library libseccomp2 (apt-get install libseccomp2)"
        )
    elif _seccomp_works():
        iso.seccomp = True
    else:
        missing.append("a seccomp filter: loading one failed on this kernel")
    if need_cgroups:
        iso.cgroup = setup_cgroups() if root else {}
        if not iso.cgroup:
            missing.append(
                "cgroups for per-submission memory, process and CPU limits: a writable cgroup "
                "v2 hierarchy with the memory and pids controllers, or cgroup v1 memory and "
                "pids hierarchies (as root on the host or in a privileged container)"
            )
    if missing and not insecure:
        remove_cgroups(iso.cgroup.get("dirs", {}))
        raise SandboxUnavailable(
            "cannot grade untrusted code safely on this machine; missing:\n"
            + "\n".join(f"  - {m}" for m in missing)
            + "\nFix that, or pass --insecure (ATTENTION_LAB_INSECURE=1 on Gradescope) to "
            "grade anyway; every result then says it was graded without isolation."
        )
    iso.missing, iso.insecure = missing, insecure
    return iso
