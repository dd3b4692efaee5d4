"""Time `make grade` as a student runs it: the whole kit, then each module (EX=m).

    .venv/bin/python bench/grade_times.py [--runs 3] [--submission solutions]

Each figure is the median of `runs` runs of `python -m autograder grade` in a fresh process
(what `make grade` runs, warm: .venv exists, files in the page cache), in wall-clock seconds
and in CPU seconds (user + sys of the process and its children); the load average is
printed beside them, since on a shared machine the wall clock says more about the neighbours
than about the kit. The training check is not included (it runs in `make grade-train`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def once(submission: str, ex: str | None, results: Path) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "autograder", "grade", "--submission", submission]
    cmd += ["--results", str(results)] + (["--ex", ex] if ex else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--submission", default="solutions")
    parser.add_argument("--modules", default="", help="comma-separated (default: all)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder import registry

    wanted = [m for m in args.modules.split(",") if m] or registry.modules()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        once(args.submission, None, results)  # warm the page cache
        print(f"{'what':14} {'wall s':>7} {'cpu s':>7}   load average")
        for ex in [None, *wanted]:
            runs = [once(args.submission, ex, results) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            load = os.getloadavg()[0]
            print(f"{ex or 'whole kit':14} {wall:7.2f} {cpu:7.2f}   {load:.1f}", flush=True)


if __name__ == "__main__":
    main()
