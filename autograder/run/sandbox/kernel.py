"""nbgrader's notebook kernel, confined by the sandbox's jail: the launcher of `make autograde`.

A kernelspec (channels/nbgrader/kernel.py writes it) starts it:

    python -m autograder.run.sandbox.kernel SPEC [ipykernel's arguments: -f CONNECTION ...]

SPEC is a JSON file the kernel never sees: the isolation jail.detect found (and the run's
cgroup), the limits, the sandbox uid, the staged view of the kit (the student copy's files,
and the stand-ins of the assignment's dependencies), the folder of the kernels' sockets, the
variables the kernel gets, the IPython profile to copy.

This process is the *monitor* (as zygote._monitor is a submission's): it makes a copy of the
notebook's folder (the kernel's working folder: what it writes there stays in the copy), a
copy of the connection file and of the profile the kernel may read, puts the kernel in a
cgroup of its own where the run has one and in a new PID namespace (namespace modes), forks
it, waits for it, then kills whatever it left (cgroup, PID namespace, sandbox uid) and
removes the copies. The forked process confines itself with jail.enter, exactly as a
sandboxed process does (the file view by allow-list, a private /tmp, an unprivileged uid,
rlimits, no_new_privs, seccomp), its environment an allow-list, then execs ipykernel.

The kernel talks to nbgrader over ZMQ: with TCP on localhost a new network namespace could
not reach nbgrader's sockets, so `make autograde` runs the kernels with transport=ipc (Unix
sockets, in the runtime folder: the one writable folder the view shares with nbgrader).

Signals: jupyter_client signals the launcher's process group (an interrupt is SIGINT, a
kill SIGKILL), which holds the kernel too; the monitor ignores SIGINT, and on SIGTERM kills
the kernel and ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from .jail import (
    PR_SET_CHILD_SUBREAPER,
    Isolation,
    Limits,
    clean_environment,
    enter,
    join_cgroup,
    kill_cgroup,
    libc,
    new_cgroup,
    seccomp_module,
    sweep,
    sweep_files,
    unshare_pid,
)

PR_SET_PDEATHSIG = 1
MAX_FILES, MAX_BYTES = 2000, 50 << 20  # the copy of the notebook's folder (as a submission's)
SETUP_FAILED = 70  # the exit code of a kernel that could not be confined (nothing ran)


def copy_folder(source: Path, target: Path) -> None:
    """The regular files of `source` into `target` (no links, no special files, size-capped:
    the notebook's folder is the student's)."""
    count = total = 0
    for dirpath, dirs, files in os.walk(source):
        rel = Path(dirpath).relative_to(source)
        dirs[:] = sorted(d for d in dirs if not (Path(dirpath) / d).is_symlink())
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            count += 1
            total += path.stat().st_size
            if count > MAX_FILES or total > MAX_BYTES:
                return
            shutil.copyfile(path, target / rel / name)


def _chown_tree(path: Path, uid: int | None) -> None:
    if uid is None:
        return
    for dirpath, _dirs, files in os.walk(path):
        os.chown(dirpath, uid, uid)
        for name in files:
            os.chown(os.path.join(dirpath, name), uid, uid)


def _connection_file(args: list[str]) -> int:
    """The index of the connection file's path in ipykernel's arguments."""
    for i, arg in enumerate(args):
        if arg == "-f" and i + 1 < len(args):
            return i + 1
    raise SystemExit("the kernel's arguments hold no connection file (-f FILE)")


def prepare(
    spec: dict[str, Any], args: list[str], cwd: str
) -> tuple[Path, dict[str, Any], list[str]]:
    """(the kernel's own folder, jail.enter's request, ipykernel's arguments): the copies the
    kernel may read and write, owned by its uid."""
    uid = spec["uid"]
    work = Path(spec["work"]) / f"kernel-{os.getpid()}"
    work.mkdir(mode=0o711)
    (work / "root").mkdir()
    private = work / "private"  # the kernel's: its connection file, profile, notebook copy
    home = private / "home"
    home.mkdir(parents=True)
    copy_folder(Path(cwd), home)
    if spec.get("profile"):
        shutil.copytree(spec["profile"], private / "ipython")
    index = _connection_file(args)
    shutil.copyfile(args[index], private / "connection.json")
    args = [*args[:index], str(private / "connection.json"), *args[index + 1 :]]
    _chown_tree(private, uid)
    private.chmod(0o700)
    iso = Isolation(**spec["isolation"])
    kit = spec["kit"]
    request = {
        "uid": uid,
        "root": str(work / "root"),
        "submission_source": kit,  # the staged kit, where the kernel finds it
        "submission": kit,
        "kit": str(Path(kit) / "autograder"),
        # the kernel's folder, its notebook copy where nbgrader started it, the sockets
        "writable": [(str(private), str(private)), (str(home), cwd)]
        + [(spec["runtime"], spec["runtime"])],
    }
    request["cwd"] = cwd if iso.namespaces else str(home)
    return work, request, args


def _kernel(spec: dict[str, Any], request: dict[str, Any], args: list[str], go: int) -> None:
    """The forked process: wait for the cgroup, confine itself, exec ipykernel. Never
    returns; exits SETUP_FAILED when a step of the confinement failed."""
    try:
        os.read(go, 1)  # the monitor has put this process in its cgroup
        os.close(go)
        iso = Isolation(**spec["isolation"])
        enter(iso, request, Limits(**spec["limits"]))
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after the uid changed
        home = "/tmp" if iso.namespaces else str(Path(request["writable"][0][0]) / "home")
        os.chdir(request["cwd"])
        clean_environment(home)
        os.environ.update(spec["env"])
        private = request["writable"][0][0]
        if spec.get("profile"):
            os.environ["IPYTHONDIR"] = str(Path(private) / "ipython")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except BaseException as e:  # fail closed: no notebook code runs
        os.write(2, f"attention-lab: the kernel could not be confined ({e})\n".encode())
        os._exit(SETUP_FAILED)
    python = sys.executable
    try:
        os.execv(python, [python, "-m", "ipykernel_launcher", *args])
    except OSError as e:  # the interpreter is out of its reach (uid mode: detect says so)
        os.write(2, f"attention-lab: the kernel could not start ({e})\n".encode())
    os._exit(SETUP_FAILED)


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    iso = Isolation(**spec["isolation"])
    limits = Limits(**spec["limits"])
    cwd = os.getcwd()
    work, request, args = prepare(spec, argv[1:], cwd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the kernel's (jupyter signals the group)
    libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # nbgrader gone: so is this
    seccomp_module()  # libseccomp loaded here, as the zygote does: the view has no ldconfig
    cgroup: dict[str, str] = {}
    code = SETUP_FAILED
    try:
        if iso.cgroup:
            cgroup = new_cgroup(iso.cgroup, work.name, limits)
        if iso.namespaces:
            unshare_pid(userns=iso.mode == "userns")
        go_read, go_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_write)
            _kernel(spec, request, args, go_read)  # never returns
        os.close(go_read)

        def stop(signum: int, frame: Any) -> None:
            os.kill(pid, signal.SIGKILL)

        signal.signal(signal.SIGTERM, stop)
        if cgroup:
            join_cgroup(cgroup, pid)
        os.write(go_write, b"1")
        os.close(go_write)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                status = 0
                break
        code = os.waitstatus_to_exitcode(status)
        code = code if code >= 0 else 128 - code
    finally:
        if cgroup:
            kill_cgroup(cgroup)
        if spec["uid"] is not None:
            sweep(spec["uid"])
            if not iso.namespaces:
                sweep_files(spec["uid"])
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
