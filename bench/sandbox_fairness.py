"""How much one hostile submission slows a classmate's grading (run as root).

Grades a correct submission (the solutions) alone, then again while another sandbox runs an
attacker that starts 60 busy processes, each in its own session, and keeps them busy for
its whole time limit. Prints the correct submission's grading time and score both ways.
`--without-cgroups` drops the per-sandbox cgroups (what the kit did before issue 13), to
compare on the same machine.

    python bench/sandbox_fairness.py [--modules attention,masks] [--without-cgroups]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ATTACKER = """
import os, time
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()
        while True:
            pass


def scaled_dot_product_attention(q, k, v, mask=None):
    time.sleep(30)  # keep the busy processes alive (sleeping costs no CPU seconds)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default="attention,masks")
    parser.add_argument("--without-cgroups", action="store_true")
    args = parser.parse_args()
    from autograder.run.sandbox.jail import Limits

    modules = args.modules.split(",")
    attacker = Path(tempfile.mkdtemp(prefix="attention-lab-fairness-"))
    (attacker / "attention.py").write_text(ATTACKER)
    limits = Limits(timeout=40)
    try:
        _compare(modules, attacker, limits, args.without_cgroups)
    finally:
        shutil.rmtree(attacker, ignore_errors=True)
    return 0


def _compare(modules, attacker, limits, without_cgroups) -> None:
    from autograder.run.sandbox.jail import remove_cgroups
    from autograder.run.sandbox.runner import Sandbox

    with Sandbox(modules, slots=2, limits=limits, seed=12345) as sb:
        if without_cgroups:
            remove_cgroups(sb.isolation.cgroup.get("dirs", {}))
            sb.isolation.cgroup = {}
        print(f"isolation: {sb.isolation.summary()}")
        sb.grade(ROOT / "solutions", "warm-up")  # the zygote's warm-up is not measured
        alone = sb.grade(ROOT / "solutions", "alone")
        seconds = alone.process.get("seconds", float("nan"))
        print(f"alone:          {seconds:6.2f} s  {alone.score:g}/{alone.max_score:g}")
        with ThreadPoolExecutor(2) as pool:
            hostile = pool.submit(sb.grade, attacker, "attacker")
            time.sleep(3)  # the attacker's processes are running by now
            beside = sb.grade(ROOT / "solutions", "beside")
            print(
                f"beside attack:  {beside.process.get('seconds', float('nan')):6.2f} s  "
                f"{beside.score:g}/{beside.max_score:g}"
            )
            hostile.result()
        for graded in (alone, beside):
            lost = [r for r in graded.results if r.score < r.points]
            for r in lost[:3]:
                print(f"  {graded.name} lost {r.check_id}: {r.status} {r.message[:150]}")
            for note in graded.notes[:3]:
                print(f"  {graded.name}: {note}")


if __name__ == "__main__":
    sys.exit(main())
