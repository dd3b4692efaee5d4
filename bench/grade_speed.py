"""Time `make grade` as a student runs it: the whole kit and each module (EX=m), side by side.

    make bench-grade [RUNS=3]
    .venv/bin/python bench/grade_speed.py [--runs 3] [--submission solutions] [--modules a,b]
        [--direct]

Warm: one untimed run of the whole kit first (page cache, the heatmaps' cache under build/).
Each figure is the median of `runs` runs of `make grade` (with --direct: `python -m autograder
grade`, without make's own start-up) in a fresh process, in wall-clock seconds and in CPU
seconds (user + sys of the process and its children). The load average is printed beside
them: on a shared machine the wall clock says more about the neighbours than about the kit.
The training check is not included (it runs in `make grade-train`). Targets (issue 17):
the whole kit at most 5 s, each module at most 2.5 s, warm on 2 cores.
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
WHOLE, MODULE = 5.0, 2.5  # seconds: the targets


def command(submission: str, ex: str | None, results: Path, direct: bool) -> list[str]:
    if direct:
        cmd = [sys.executable, "-m", "autograder", "grade", "--submission", submission]
        return cmd + ["--results", str(results)] + (["--ex", ex] if ex else [])
    cmd = ["make", "--no-print-directory", "grade", f"SUBMISSION={submission}"]
    return cmd + [f"RESULTS={results}"] + ([f"EX={ex}"] if ex else [])


def once(cmd: list[str]) -> tuple[float, float]:
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
    parser.add_argument("--direct", action="store_true", help="python -m autograder, not make")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder import registry

    wanted = [m for m in args.modules.split(",") if m] or registry.modules()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        once(command(args.submission, None, results, args.direct))  # warm, untimed
        load = os.getloadavg()
        print(f"cores: {os.cpu_count()}, load average before: {load[0]:.2f} {load[1]:.2f}")
        print(f"{'what':14} {'wall s':>7} {'cpu s':>7} {'target':>7}   load")
        rows = []
        for ex in [None, *wanted]:
            cmd = command(args.submission, ex, results, args.direct)
            runs = [once(cmd) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            target = MODULE if ex else WHOLE
            rows.append((ex, wall, cpu, target))
            mark = "" if wall <= target else "  over"
            line = f"{ex or 'whole kit':14} {wall:7.2f} {cpu:7.2f} {target:7.1f}   "
            print(f"{line}{os.getloadavg()[0]:.1f}{mark}", flush=True)
        modules = [r for r in rows if r[0]]
        print(
            f"{'sum of modules':14} {sum(r[1] for r in modules):7.2f} "
            f"{sum(r[2] for r in modules):7.2f}   (each module graded alone)"
        )


if __name__ == "__main__":
    main()
