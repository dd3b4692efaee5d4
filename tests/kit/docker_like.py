"""Run a command as an ordinary container runs it (Docker's defaults): root without
CAP_SYS_ADMIN and the other capabilities Docker drops, under a seccomp filter that denies
what Docker's default profile denies such a process (unshare, mount, umount2, setns,
pivot_root, clone with namespace flags, clone3, keyctl, bpf, ...), and without a network
(a fresh network namespace holding only a down loopback). Like a container, it has its own
mount namespace: where the interpreter lies behind a folder other users cannot enter (a
pyenv under /root on a developer's machine), that folder is replaced by a world-enterable
one holding only the interpreter, as an image has it (/usr/local, /autograder/venv); and
the cgroup file system is read-only, as Docker mounts it.

    python tests/kit/docker_like.py CMD...      (the kit's tests import `command` / `usable`)
    DOCKER_LIKE_USER=50000 python tests/kit/docker_like.py CMD...   (a non-root USER)

Like /work/shared/tools/docker-like, but with the kit's own pyseccomp (requirements.lock)
and prctl(PR_CAPBSET_DROP), so it needs neither python3-seccomp nor capsh. Needs root with
CAP_SYS_ADMIN (to set it up; the command itself then has neither) and libseccomp2.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import tempfile

# Docker's default capability set: everything else is dropped from the bounding set, so the
# command (root, exec'd) gets only these.
KEPT = {
    0: "chown",
    1: "dac_override",
    3: "fowner",
    4: "fsetid",
    5: "kill",
    6: "setgid",
    7: "setuid",
    8: "setpcap",
    10: "net_bind_service",
    13: "net_raw",
    18: "sys_chroot",
    27: "mknod",
    29: "audit_write",
    31: "setfcap",
}
DENIED = (
    "unshare setns mount umount2 pivot_root move_mount open_tree fsopen fsmount fsconfig "
    "fspick open_by_handle_at name_to_handle_at keyctl add_key request_key bpf "
    "perf_event_open userfaultfd kexec_load kexec_file_load init_module finit_module "
    "delete_module"
).split()
NAMESPACE_FLAGS = (0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x04000000, 0x08000000)
NAMESPACE_FLAGS += (0x02000000,)  # user, mount, pid, net, uts, ipc, cgroup
PR_CAPBSET_DROP = 24
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 1, 32, 4096, 8192, 0x4000, 1 << 18


def usable() -> str:
    """'' when this machine can emulate a container, else why not (for a skip)."""
    if os.geteuid() != 0:
        return "needs root"
    try:
        import pyseccomp  # noqa: F401
    except Exception as e:  # pragma: no cover - libseccomp2 missing
        return f"needs pyseccomp and libseccomp2 ({e})"
    return ""


def command(argv: list[str]) -> list[str]:
    """argv run under the emulation (a fresh interpreter sets it up, then execs argv)."""
    return [sys.executable, os.path.abspath(__file__), *argv]


def _blocked_by(path: str) -> str | None:
    """The first ancestor of `path` that other users may not enter, or None."""
    current = "/"
    for part in path.split("/")[1:]:
        current = os.path.join(current, part)
        if os.path.isdir(current) and not os.stat(current).st_mode & 0o001:
            return current
    return None


def confine() -> None:
    """Confine this process (root, CAP_SYS_ADMIN) as Docker would confine a container's."""
    import pyseccomp as sc

    libc = ctypes.CDLL(None, use_errno=True)

    def ok(result: int, what: str) -> None:
        if result != 0:
            raise OSError(ctypes.get_errno(), what)

    def mount(source: str | None, target: str, fstype: str | None, flags: int, data=None):
        enc = [v.encode() if v is not None else None for v in (source, target, fstype, data)]
        ok(libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")

    # no network: a fresh namespace, loopback down; the container's own mount namespace
    ok(libc.unshare(CLONE_NEWNET | CLONE_NEWNS), "unshare(net, mount)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Docker mounts the cgroup file system read-only in an unprivileged container
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith("/sys/fs/cgroup")]
    for point in points:
        mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for prefix in sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}):
        blocked = _blocked_by(prefix)
        if blocked:
            hold = tempfile.mkdtemp(prefix="docker-like-")
            mount(prefix, hold, None, MS_BIND | MS_REC)
            mount("tmpfs", blocked, "tmpfs", 0, "mode=0755,size=1m")
            os.makedirs(prefix, exist_ok=True)
            mount(hold, prefix, None, MS_MOVE)
            os.rmdir(hold)
    f = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:
            pass  # not a system call of this architecture
    for flag in NAMESPACE_FLAGS:
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # as Docker: the C library falls back
    # No no_new_privs (Docker sets none): loading a filter without it needs CAP_SYS_ADMIN,
    # which we still hold here.
    f.set_attr(sc.Attr.CTL_NNP, 0)
    f.load()
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        if cap not in KEPT and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    confine()
    if os.environ.get("DOCKER_LIKE_USER"):  # a container whose USER is not root
        uid = int(os.environ.pop("DOCKER_LIKE_USER"))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # root's capabilities after exec: the bounding set's (what KEPT left)
    os.execvp(sys.argv[1], sys.argv[1:])
