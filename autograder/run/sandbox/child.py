"""The sandboxed process: runs the probes of every check on one submission.

Order matters: the process confines itself first (jail.enter), then draws every check's
inputs (before any student code can monkeypatch torch), then imports the student's modules
and runs the probes, writing one message per check to the channel (channel.probe_all: the
message loop of every placement). It grades one module (runner.py: one process per module,
a fresh fork of the zygote each, so no module's code can reach another's). It never judges: the
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
from typing import TYPE_CHECKING, Any

from . import wire
from .jail import Isolation, Limits, clean_environment, enter

if TYPE_CHECKING:
    from ..limits import Board


def _close_fds(keep: set[int]) -> None:
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def main(
    request: dict[str, Any],
    channel: int,
    output: int,
    setup: int,
    board: Board | None = None,
    handshake: tuple[int, int] | None = None,
) -> None:
    """Never returns: ends the process with os._exit. Writes b"ok" to `setup` (and closes
    it) once confined, before any student code runs; on failure, why, and exits. `board`:
    where this process says which exercise runs (limits.Board, shared with the monitor).
    `handshake`: (ready, go) of a measured part's run (run/measure.py): the monitor reads
    this process's baseline once its inputs are drawn, before any student code runs."""
    try:
        _run(request, channel, output, setup, board, handshake)
    except BaseException:
        wire.last_words("sandbox")
    finally:
        wire.flush_streams()
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


def _run(
    request: dict[str, Any],
    channel: int,
    output: int,
    setup: int,
    board: Board | None,
    handshake: tuple[int, int] | None,
) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    wire.student_streams()  # not the zygote's: UTF-8 whatever the locale
    _close_fds({channel, setup, *(handshake or ())})
    os.setsid()
    for name in ("SIGINT", "SIGTERM", "SIGALRM", "SIGPROF", "SIGCHLD"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _confine(request, setup)

    import torch

    from ...core.check import ProbeSpec
    from .. import measure
    from ..channel import probe_all
    from ..limits import slots_of
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
    send = lambda message: wire.send(channel, message)  # noqa: E731
    run = Attempts(submission, send, guards, board, slots_of(todo))
    if handshake is not None:  # the monitor reads this process's baseline now
        measure.child_handshake(*handshake)
    probe_all(
        todo,
        inputs,
        run,  # never raises for what student code does
        lambda message, blob=b"": wire.send(channel, message, blob),
    )
