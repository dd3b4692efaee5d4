"""How long `make watch` takes from a save to the re-graded table, per module.

    .venv/bin/python bench/watch_latency.py [--runs 3]

Starts the watcher on a copy of solutions/ (in a temporary folder), waits for its first
grading, then for each module in turn rewrites the file (same text, new modification time)
and measures the wall-clock time until the watcher prints "graded in"; median of `runs`
saves per module. The load average is printed beside each figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder.core import registry

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [sys.executable, "-u", "-m", "autograder", "watch", "--submission", str(folder)]
        cmd += ["--results", str(Path(tmp) / "build" / "results.json")]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        started = time.perf_counter()

        def wait_graded() -> float:
            for line in proc.stdout:
                if "graded in" in line:
                    return time.perf_counter()
            raise RuntimeError("the watcher stopped")

        first = wait_graded() - started
        print(f"start-up and first grading of the whole kit: {first:.2f} s")
        print(f"{'module':12} {'save -> table s':>16}   load average")
        try:
            for module in registry.modules():
                path = folder / f"{module}.py"
                times = []
                for _ in range(args.runs):
                    time.sleep(0.5)
                    path.write_text(path.read_text())
                    saved = time.perf_counter()
                    times.append(wait_graded() - saved)
                load = os.getloadavg()[0]
                print(f"{module:12} {statistics.median(times):16.2f}   {load:.1f}", flush=True)
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
