"""Time `make grade` as a student runs it: the whole kit and each module (EX=m), side by side,
on the warm grader and in a fresh process.

    make bench-grade [RUNS=3]
    .venv/bin/python bench/grade_speed.py [--runs 3] [--submission solutions] [--modules a,b]
        [--direct]

Two columns per row, from one run of this script:
- warm: `make grade` as a student's second and later runs see it: the warm grader
  (autograder/run/warm.py) is up (this script starts its own, in a temporary folder, and stops it
  at the end), and each grading is a fork of it. Wall-clock seconds only: the fork's CPU time
  is not this script's child's.
- fresh: `make grade WARM=0`, a new interpreter that imports torch and the kit each time
  (the first `make grade` of a session, and what the kit's tests run). Wall-clock and CPU
  seconds (user + sys of the process and its children).
Each figure is the median of `runs` runs; --direct runs `python -m autograder grade` without
make's own start-up. The load average is printed beside them: on a shared machine the wall
clock says more about the neighbours than about the kit. The training check is not included
(it runs in `make grade-train`). Targets (issue 17): the whole kit at most 5 s, each module
at most 2.5 s, warm on 2 cores.
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


def once(cmd: list[str], warm: Path | None) -> tuple[float, float]:
    """One grading; `warm`: the warm grader's folder (None: a fresh process, WARM=0)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env["WARM"] = env["ATTENTION_LAB_WARM"] = "1" if warm else "0"
    if warm:
        env["ATTENTION_LAB_WARM_DIR"] = str(warm)
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
    from autograder.core import registry
    from autograder.run import warm as warm_grader

    wanted = [m for m in args.modules.split(",") if m] or registry.modules()
    with tempfile.TemporaryDirectory() as tmp:
        results, warm = Path(tmp) / "results.json", Path(tmp) / "warm"
        try:
            _measure(args, wanted, results, warm)
        finally:
            warm_grader.stop(warm)


def _measure(args, wanted: list[str], results: Path, warm: Path) -> None:
    once(command(args.submission, None, results, args.direct), warm)  # untimed; starts it
    deadline = time.monotonic() + 120
    while not (warm / "warm-grader.sock").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    load = os.getloadavg()
    print(f"cores: {os.cpu_count()}, load average before: {load[0]:.2f} {load[1]:.2f}")
    print(f"{'':14} {'warm':>7}   {'fresh (WARM=0)':>15}")
    print(f"{'what':14} {'wall s':>7}   {'wall s':>7} {'cpu s':>7} {'target':>7}   load")
    rows = []
    for ex in [None, *wanted]:
        cmd = command(args.submission, ex, results, args.direct)
        hot = statistics.median(once(cmd, warm)[0] for _ in range(args.runs))
        runs = [once(cmd, None) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        target = MODULE if ex else WHOLE
        rows.append((ex, hot, wall, cpu))
        mark = "" if hot <= target else "  over"
        line = f"{ex or 'whole kit':14} {hot:7.2f}   {wall:7.2f} {cpu:7.2f} {target:7.1f}   "
        print(f"{line}{os.getloadavg()[0]:.1f}{mark}", flush=True)
    modules = [r for r in rows if r[0]]
    print(
        f"{'sum of modules':14} {sum(r[1] for r in modules):7.2f}   "
        f"{sum(r[2] for r in modules):7.2f} {sum(r[3] for r in modules):7.2f}"
        "   (each module graded alone)"
    )


if __name__ == "__main__":
    main()
