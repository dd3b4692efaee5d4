"""The sandboxed process: runs the probes of every check on one submission.

Order matters: the process confines itself first (jail.enter), then draws every check's
inputs (before any student code can monkeypatch torch), then imports the student's modules
and runs the probes, writing one message per check to the channel (channel.probe_all: the
message loop of every placement). It never judges: the
verdicts run in the trusted parent on what arrives over the channel. It never times itself
either: the monitor (zygote.py) reads its CPU seconds from /proc and stops it from outside
when a check overruns (no signal lands inside torch's lazy imports); the runner then grades
the remaining checks in a fresh process, where the function that did not finish is guarded
(probing.Attempts: a check that calls it ends at once, timed out "same as above"), by the
one crash and timeout policy of every placement (policy.py).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
import types
from typing import TYPE_CHECKING, Any

from . import wire
from .jail import Isolation, Limits, clean_environment, enter

if TYPE_CHECKING:
    from ...core.check import Check


class _State:
    """What a module's code could change for the modules graded after it in the same process
    (a group, view.groups): torch's global switches, the namespaces the probes run on
    (torch's and the kit's own), threads, child processes, memory. Taken before any student
    code; clean() says whether the process is still as it was, so that the next module is
    graded as in a process of its own (else the child stops and the runner grades the rest
    in a fresh one); restore() resets the global random state the next module starts from."""

    NAMESPACES = ("builtins", "math", "torch", "torch.nn", "torch.nn.functional", "numpy")
    MEMORY_SLACK = 256 << 20  # bytes of resident memory a module may leave behind

    def __init__(self) -> None:
        import torch

        self.rng = torch.random.get_rng_state()
        self.taken = self._take()
        self.rss = (_status("VmRSS") or 0) * 1024

    def _take(self) -> dict[str, Any]:
        import gc
        import warnings

        import torch

        taken: dict[str, Any] = {
            "switches": (
                torch.get_default_dtype(),
                str(torch.get_default_device()),
                torch.is_grad_enabled(),
                torch.is_inference_mode_enabled(),
                torch.is_anomaly_enabled(),
                torch.are_deterministic_algorithms_enabled(),
                torch.get_num_threads(),
                torch.get_float32_matmul_precision(),
                sys.gettrace(),
                sys.getprofile(),
                sys.getrecursionlimit(),
                gc.isenabled(),
                tuple(map(id, warnings.filters)),
                tuple(signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGTERM)),
            ),
            "threads": _status("Threads"),
            "children": _children(),
        }
        kit = [n for n in sys.modules if n == "autograder" or n.startswith("autograder.")]
        for name in (*self.NAMESPACES, *kit):  # the kit's own: its probes, probing, engine
            module = sys.modules.get(name)
            if module is not None:
                taken[name] = {k: id(v) for k, v in vars(module).items()}
        for cls in (torch.Tensor, torch.nn.Module):
            taken[cls.__qualname__] = {k: id(v) for k, v in vars(cls).items()}
        return taken

    def clean(self) -> bool:
        """Whether nothing above changed (a submodule imported since is no change); False
        when it cannot even be told (student code replaced a module with something else)."""
        try:
            return self._unchanged()
        except Exception:
            return False

    def _unchanged(self) -> bool:
        now = self._take()
        for key, before in self.taken.items():
            after = now.get(key)
            if isinstance(before, dict):
                if after is None:
                    return False
                module = sys.modules.get(key)
                added = set(after) - set(before)
                if any(after.get(k) != v for k, v in before.items()) or any(
                    not isinstance(getattr(module, k, None), types.ModuleType) for k in added
                ):
                    return False
            elif after != before:
                return False
        memory = _status("VmRSS")
        return memory is not None and memory * 1024 < self.rss + self.MEMORY_SLACK

    def restore(self) -> None:
        import torch

        torch.random.set_rng_state(self.rng)


def _status(field: str) -> int | None:
    """A number of /proc/self/status (kB for sizes)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _children() -> tuple[str, ...]:
    try:
        return tuple(
            open(f"/proc/self/task/{t}/children").read() for t in os.listdir("/proc/self/task")
        )
    except OSError:
        return ("unknown",)


def _close_fds(keep: set[int]) -> None:
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def main(request: dict[str, Any], channel: int, output: int, setup: int) -> None:
    """Never returns: ends the process with os._exit. Writes b"ok" to `setup` (and closes
    it) once confined, before any student code runs; on failure, why, and exits."""
    try:
        _run(request, channel, output, setup)
    except BaseException:
        try:
            os.write(2, f"[grader] sandbox error:\n{traceback.format_exc()}".encode())
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(0)


def _confine(request: dict[str, Any], setup: int) -> None:
    """Fail closed: any error here ends the process before student code exists in it."""
    limits = Limits(**request["limits"])
    try:
        isolation = Isolation(**request["isolation"])
        enter(isolation, request, limits)
        home = "/tmp" if isolation.namespaces else request["scratch"]
        os.chdir(home)
        clean_environment(home)
    except BaseException as e:
        os.write(setup, f"{type(e).__name__}: {e}"[:500].encode())
        os._exit(70)
    os.write(setup, b"ok")
    os.close(setup)


def _run(request: dict[str, Any], channel: int, output: int, setup: int) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    _close_fds({channel, setup})
    os.setsid()
    for name in ("SIGINT", "SIGTERM", "SIGALRM", "SIGPROF", "SIGCHLD"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _confine(request, setup)

    import torch

    from ...core.check import ProbeSpec
    from ..channel import probe_all
    from ..probing import Attempts, draw_inputs
    from ..submission import Submission

    torch.set_num_threads(1)
    # The probe side only, by name (core.resolve refuses anything else): no verdict, no
    # model of a computation, no reference output is ever imported in this process.
    todo = [ProbeSpec.of(spec) for spec in request["specs"]]
    # Inputs first: nothing the student's import does can change them.
    # Each check's own seed: the submission's seed never reaches this process (runner.py).
    inputs = {c.id: draw_inputs(c, int(request["seeds"][c.id])) for c in todo}
    del request["seeds"]  # what is left of them is the inputs, which the probes hand over
    submission = Submission(request["submission"])
    # The functions that did not finish in an earlier process (runner.py: policy.Stuck).
    guards = {str(m): [str(n) for n in names] for m, names in request.get("guards", {}).items()}
    run = Attempts(submission, lambda message: wire.send(channel, message), guards)
    state = _State()  # before any student code: what a fresh process would start from
    module = todo[0].module if todo else None

    def before(check: Check) -> bool:
        """The next module of a group (view.groups) starts as in a fresh process, or the
        runner grades it in one."""
        nonlocal module
        if check.module != module:
            module = check.module
            if not state.clean():
                return False
            state.restore()
        return True

    probe_all(
        todo,
        inputs,
        run,  # never raises for what student code does
        lambda message, blob=b"": wire.send(channel, message, blob),
        before=before,
    )
