"""The hidden tier's reference outputs, computed in a trusted fork of the zygote.

Zygote.references sends the zygote a "references" request; the zygote forks, and the fork
(never confined, never a parent of a sandboxed process) runs main() here: it imports
solutions/ and computes probe(solution) on the student's seed (fixtures.compute_timed),
writing the outputs back as wire messages. The fork starts with torch imported and warmed
up, so a student's references cost their computation only, several students' references
are computed at once beside their sandboxes, and the grader's own process stays free for
verdicts. No view holds this file: it imports fixtures (view.NEVER).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ..fixtures import compute_timed
from . import wire


def main(request: dict, out: int) -> None:
    """Compute the reference outputs of `request["modules"]` on `request["seed"]` from
    `request["solutions"]` and write one wire message per check ({"type": "reference",
    module, check, outputs, cpu}) or per module that failed ({"type": "reference-error",
    module, error}), then {"type": "done"}, to `out`. Never returns."""
    code = 0
    signal.alarm(max(1, int(request["timeout"])))  # never outlives the parent's wait
    try:
        solutions, seed = Path(request["solutions"]), int(request["seed"])
        for module in request["modules"]:
            try:
                refs, cpu = compute_timed(module, solutions, seed)
            except Exception as e:
                error = f"{type(e).__name__}: {e}"[:1000]
                wire.send(out, {"type": "reference-error", "module": module, "error": error})
                continue
            for slug, outputs in refs.items():
                described, blob = wire.encode_outputs(outputs)
                header = {"type": "reference", "module": module, "check": slug}
                wire.send(out, {**header, "outputs": described, "cpu": cpu[slug]}, blob)
        wire.send(out, {"type": "done"})
    except BaseException:
        code = 1
    os._exit(code)
