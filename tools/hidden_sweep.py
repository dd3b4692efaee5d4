"""Do the hidden seeds treat correct code and mistakes alike? (`python tools/hidden_sweep.py`)

The kit's tests grade every variant once, on the public tier. Students of a course are graded
on hidden seeds of their own (batch, Gradescope, PrairieLearn, nbgrader autograde), where
every size, window, chunk and value is drawn afresh: a check whose verdict straddles a
threshold on some seeds fails correct code there, or lets a mistake through. This grades the
solution and every alternative (and with --mutants every mutant) of the given modules on N
hidden seeds each, with the engine of `make grade` (run.engine.grade_module, the references
of run.engine.grade's hidden tier), and prints each disagreement:

  CORRECT-LOST  a correct variant (solution, alternative) lost a check on that seed
  MISSED        a mutant kept full marks on that seed
  UNNAMED       a mutant lost points on that seed, never under the mistake it expects
  CHARGED       a mutant that declares the checks it loses (`# loses:`) lost others there

Exit status 1 when anything is printed. Slow checks (training runs) are left out: their seed
spread is measured by tools/measure_train.py.

    python tools/hidden_sweep.py [--modules attention,masks] [--seeds 20] [--first 1]
                                 [--mutants] [--mutant-seeds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from autograder.core import model_replays, registry  # noqa: E402
from autograder.core.references import References  # noqa: E402
from autograder.core.settings import Settings  # noqa: E402
from autograder.run.engine import grade_module  # noqa: E402
from autograder.run.submission import Submission  # noqa: E402


def grade_variant(module: str, path: Path | None, refs: References, limits) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
        if path is not None:
            (folder / f"{module}.py").write_text(path.read_text())
        checks = [c for c in registry.checks_of(module) if not c.slow]
        return grade_module(checks, Submission(folder), refs, limits=limits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=",".join(registry.modules()))
    parser.add_argument("--seeds", type=int, default=20, help="hidden seeds per correct variant")
    parser.add_argument("--first", type=int, default=1, help="the first hidden seed")
    parser.add_argument("--mutants", action="store_true", help="sweep the mutants too")
    parser.add_argument("--mutant-seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    modules = [m for m in args.modules.split(",") if m]
    unknown = sorted(set(modules) - set(registry.modules()))
    if unknown:
        parser.error(f"unknown module(s) {unknown}: expected some of {registry.modules()}")
    bad = graded = 0
    started = time.perf_counter()
    for seed in range(args.first, args.first + max(args.seeds, args.mutant_seeds)):
        refs = References.hidden(seed)
        limits = refs.time_limits(Settings())
        for module in modules:
            for name, path in model_replays.variants(module, ROOT).items():
                mutant = name.startswith("mutant ")
                if mutant and (not args.mutants or seed >= args.first + args.mutant_seeds):
                    continue
                if not mutant and seed >= args.first + args.seeds:
                    continue
                results = grade_variant(module, path, refs, limits)
                graded += 1
                lost = [r for r in results if not r.passed]
                said = None
                if not mutant and lost:
                    said = "CORRECT-LOST " + "; ".join(
                        f"{r.check_id} [{r.misconception}] {r.message.splitlines()[0][:160]}"
                        for r in lost
                    )
                elif mutant and not lost:
                    said = "MISSED"
                elif mutant and path is not None:
                    expects = model_replays.header(path, "expects")
                    loses = model_replays.header(path, "loses")
                    slugs = {r.check_id.split(".", 1)[1] for r in lost}
                    if expects not in {r.misconception for r in lost}:
                        said = f"UNNAMED expects [{expects}], said " + ", ".join(
                            f"{r.check_id} [{r.misconception}]" for r in lost
                        )
                    elif loses is not None and slugs != {
                        s.strip() for s in loses.split(",") if s.strip()
                    }:
                        said = f"CHARGED declares {loses}, lost " + ", ".join(
                            f"{r.check_id} [{r.misconception}]" for r in lost
                        )
                if said:
                    bad += 1
                    print(f"seed {seed} {module} {name}: {said}", flush=True)
        print(
            f"# seed {seed} done: {graded} gradings, {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    print(f"{graded} gradings, {bad} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
