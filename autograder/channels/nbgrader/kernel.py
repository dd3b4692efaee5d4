"""`make autograde` runs nbgrader's notebook kernels confined, by the sandbox's jail.

nbgrader executes each submitted notebook in a Jupyter kernel: the student's code, run by
the instructor's nbgrader. Its outcome is no grade (autograde.py judges outside it), but
unconfined it could read the kit's secrets (solutions/, the course's secret and gradebook,
other students' notebooks) and print them into its own feedback page, or write anywhere the
instructor can. So, for each autograde run, `ConfinedKernels`:

- detects what this machine allows (jail.detect, as the sandbox does; fail closed: without
  confinement the run is refused, unless --insecure, and then every kernel runs as before,
  with a warning);
- stages, per assignment, the kit as the kernel sees it: the student copy's files (the
  allow-list of authoring/student_copy.py's SHIPS, judges' models left out), plus the
  trusted stand-ins of the assignment's dependencies (its release imports them, as the
  sandbox's view holds them); no solutions/, no stand-in of an exercise beyond those, no
  fixtures beyond the public ones, no course/; the notebooks' setup cell finds it through
  ATTENTION_LAB_ROOT;
- installs a kernelspec into a Jupyter path of its own whose argv starts the kernel through
  run/sandbox/kernel.py (the launcher: jail.enter, then ipykernel), and makes nbgrader use
  it whatever the notebook's metadata says (Execute.kernel_name), over ZMQ's ipc transport
  (Unix sockets in a runtime folder of the run: the kernel has its own network namespace).

The kernel's view (namespace modes): the interpreter and its packages, the staged kit, a copy
of the notebook's folder where nbgrader started it (what it writes there is thrown away), the
run's socket folder, a private /tmp; an unprivileged uid, rlimits, seccomp, a cgroup of its
own where the machine has one. In uid mode (no namespaces): the same uid and limits, the
staged kit and the copy in a folder only it and root can reach, the secrets root-only.
"""

from __future__ import annotations

import compileall
import json
import os
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from ...authoring import student_copy
from ...core.paths import ROOT, TRUSTED
from ...core.settings import CELL_CPU_VAR, HIDDEN_VAR, KIT_ROOT_VAR, Settings
from ...run.sandbox import view
from ...run.sandbox.jail import (
    Isolation,
    Limits,
    UidPool,
    detect,
    release,
    setup_cgroups,
)
from ...run.sandbox.runner import SECRET

KERNEL_NAME = "attention-lab-confined"
# The kernel's CPU seconds over the whole notebook (each cell has its own, CELL_CPU_LIMIT).
KERNEL_CPU_SECONDS = 1800.0
# What the kernel's environment keeps of nbgrader's besides jail.SAFE_ENV: the language.
LANGUAGE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def kit_files(assignment: str) -> list[str]:
    """The kit's files a kernel of `assignment` sees (paths from the kit's root): the student
    copy's, and the trusted stand-ins of the modules the assignment builds on."""
    tops = sorted({glob.split("/")[0] for glob in student_copy.SHIPS})
    found: list[str] = []
    for top in tops:
        path = ROOT / top
        if path.is_file():
            found.append(top)
            continue
        for dirpath, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            rel = Path(dirpath).relative_to(ROOT)
            found += [(rel / f).as_posix() for f in files]
    chosen = set(student_copy.classify(found)[0])  # what ships (the patterns compiled once)
    for module in view.depends_on(assignment):
        stand_in = TRUSTED / f"{module}.py"
        if stand_in.is_file():
            chosen.add(stand_in.relative_to(ROOT).as_posix())
    return sorted(chosen)


def stage_kit(folder: Path, assignment: str) -> Path:
    """Copy the kit as the kernels of `assignment` see it into `folder` (read-only for
    everyone, with its bytecode)."""
    for name in kit_files(assignment):
        dest = folder / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(student_copy.copied(name, (ROOT / name).read_bytes()))
    compileall.compile_dir(str(folder / "autograder"), quiet=2, workers=1)
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)
    return folder


class ConfinedKernels:
    """The confinement of one `make autograde` run's kernels; a context manager. Raises
    jail.SandboxUnavailable (what is missing) when the machine cannot confine them, unless
    the run's settings say insecure."""

    def __init__(self, course_root: Path, settings: Settings | None = None):
        settings = settings or Settings()
        self.limits = replace(Limits.of(settings), timeout=KERNEL_CPU_SECONDS)
        self.uids: UidPool | None = None
        self.stage = Path(tempfile.mkdtemp(prefix="attention-lab-kernel-"))
        self.stage.chmod(0o711)
        try:
            self.isolation: Isolation = detect(
                [ROOT / s for s in SECRET] + [Path(course_root)],
                need_cgroups=False,
                insecure=settings.insecure,
                mode=settings.sandbox_mode,
            )
            if self.isolation.mode != "none" and os.geteuid() == 0:
                self.isolation.cgroup = setup_cgroups()  # where the machine has them
            if self.isolation.uses_uid:
                self.uids = UidPool(1)
        except BaseException:
            self.close()
            raise
        self.runtime = self.stage / "runtime"  # the kernels' ipc sockets
        self.runtime.mkdir()
        self.runtime.chmod(0o1733)  # the kernel makes its sockets there, lists nothing
        self.work = self.stage / "work"  # each kernel's copies (the launcher's)
        self.work.mkdir(mode=0o711)
        self.private = self.stage / "private"  # the kernelspec and its spec: root's only
        self.private.mkdir(mode=0o700)

    @property
    def confined(self) -> bool:
        return self.isolation.mode != "none"

    def summary(self) -> str:
        """One line: how the kernels run."""
        if not self.confined:
            return "notebook kernels: NOT confined. " + self.isolation.warning()
        return f"notebook kernels: confined ({self.isolation.summary()})"

    def prepare(self, assignment: str, env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
        """(nbgrader's environment, its extra arguments) for autograding `assignment`:
        `env`, the kernel's variables (IPYTHONDIR, the cell CPU seconds), as nbgrader would
        pass them to an unconfined kernel."""
        if not self.confined:
            return env, []
        kit = stage_kit(self.stage / f"kit-{assignment}", assignment)
        kernel_env = {
            KIT_ROOT_VAR: str(kit),
            "PYTHONPATH": str(kit),
            HIDDEN_VAR: "outside",
            CELL_CPU_VAR: env.get(CELL_CPU_VAR, ""),
        }
        kernel_env |= {k: v for k, v in os.environ.items() if k in LANGUAGE_VARS and v}
        spec = {
            "isolation": asdict(self.isolation),
            "limits": asdict(self.limits),
            "uid": self.uids.uids[0] if self.uids else None,
            "kit": str(kit),
            "work": str(self.work),
            "runtime": str(self.runtime),
            "profile": env.get("IPYTHONDIR"),
            "env": kernel_env,
        }
        spec_file = self.private / "spec.json"
        spec_file.write_text(json.dumps(spec))
        folder = self.private / "jupyter" / "kernels" / KERNEL_NAME
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "autograder.run.sandbox.kernel", str(spec_file)]
        kernelspec = {
            "argv": [*argv, "-f", "{connection_file}"],
            "display_name": "Python 3 (Attention Lab, confined)",
            "language": "python",
            "interrupt_mode": "signal",
            "metadata": {"debugger": False},
        }
        (folder / "kernel.json").write_text(json.dumps(kernelspec))
        outer = {**env, "JUPYTER_PATH": str(self.private / "jupyter")}
        return outer, self.arguments()

    def arguments(self) -> list[str]:
        """nbgrader's: this kernelspec whatever the notebook names, over Unix sockets in the
        runtime folder (ipc's `ip` is the sockets' path prefix)."""
        return [
            f"--Execute.kernel_name={KERNEL_NAME}",
            "--KernelManager.transport=ipc",
            f"--KernelManager.ip={self.runtime / 'kernel'}",
        ]

    def close(self) -> None:
        release(self.uids, getattr(self, "isolation", None))
        view.unstage(self.stage)

    def __enter__(self) -> ConfinedKernels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
