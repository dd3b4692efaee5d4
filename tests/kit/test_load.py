"""No clock decides a grade (docs/principles.md, principle 11): full marks on a loaded machine."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import SOLUTIONS, grade_cli


def test_solutions_get_full_marks_beside_busy_processes(tmp_path):
    """Twice as many busy processes as cores run beside the grading (bounded: each ends by
    itself after 10 minutes, and the test ends them), training check included."""
    busy = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time\nend = time.time() + 600\nwhile time.time() < end: pass",
            ]
        )
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        proc, data = grade_cli(SOLUTIONS, tmp_path, "--include-slow")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lost = [(t["name"], t["output"][:200]) for t in data["tests"] if t["score"] < t["max_score"]]
    assert not lost and data["score"] == data["max_score"], lost
    assert any(t["name"].startswith("gpt: train") for t in data["tests"])
