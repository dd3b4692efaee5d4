"""The hidden tier's reference outputs, computed in trusted forks of the zygote.

Zygote.references hands a student's request to a *reference server*: a fork of the zygote
(never confined, never a parent of a sandboxed process) running serve() here, one per
student graded at once, forked at the zygote's start (Zygote(servers=n)) or on first need.
It imports solutions/ once and then computes probe(solution) on each request's seed
(fixtures.compute_timed), writing the outputs back as wire messages, for the checks whose
verdicts read them only (Check.compares). It starts with torch imported and warmed up and
keeps what its first requests paid for (the solutions' import, lazy first uses), so a
student's references cost their computation only; several students' references are computed
at once beside their sandboxes, and the grader's own process stays free for verdicts. Each
request starts from the same global random state, as a fresh fork would. No view holds this
file: it imports fixtures (view.NEVER).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import torch

from ...core import registry
from ...core.fixtures import compute_timed, estimated_cpu
from ..submission import Submission
from . import wire


def serve(fd: int) -> None:
    """Answer requests arriving on the socket `fd` ({"modules", "seed", "solutions"} with
    the write end of a pipe attached) until the grader closes it; first sends this
    process's pid (the grader kills a server that overruns). Never returns."""
    sock = socket.socket(fileno=fd)
    start = torch.random.get_rng_state()
    loaded: dict[str, Submission] = {}
    code = 0
    try:
        sock.send(str(os.getpid()).encode())
        while True:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 1)
            if not data or not fds:
                break
            try:
                torch.random.set_rng_state(start)
                answer(json.loads(data), fds[0], loaded)
            finally:
                os.close(fds[0])
    except BaseException:
        code = 1
    os._exit(code)


def answer(request: dict[str, Any], out: int, loaded: dict[str, Submission]) -> None:
    """Compute the reference outputs of `request["modules"]` on `request["seed"]` from
    `request["solutions"]` and write one wire message per check ({"type": "reference",
    module, check, outputs, cpu}) or per module that failed ({"type": "reference-error",
    module, error}), then {"type": "done"}, to `out`. A check whose verdict reads no
    reference (core.Check.compares) is not computed: it gets only an estimate of its CPU
    seconds ({"type": "reference-cpu", module, check, cpu}; fixtures.estimated_cpu)."""
    solutions, seed = Path(request["solutions"]), int(request["seed"])
    submission = loaded.setdefault(str(solutions), Submission(solutions))
    for module in request["modules"]:
        checks = [c for c in registry.checks_of(module) if not c.slow]
        only = {c.slug for c in checks if c.compares}
        try:
            refs, cpu = compute_timed(module, solutions, seed, loaded=submission, only=only)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"[:1000]
            wire.send(out, {"type": "reference-error", "module": module, "error": error})
            continue
        for slug, outputs in refs.items():
            described, blob = wire.encode_outputs(outputs)
            header = {"type": "reference", "module": module, "check": slug}
            wire.send(out, {**header, "outputs": described, "cpu": cpu[slug]}, blob)
        skipped = {c.slug for c in checks} - only
        for slug, seconds in estimated_cpu(module, cpu, skipped).items():
            header = {"type": "reference-cpu", "module": module, "check": slug}
            wire.send(out, {**header, "cpu": seconds})
    wire.send(out, {"type": "done"})
