"""How much does one mistake cost? (`python tools/fairness.py [--modules a,b] [--top N]`)

Grades every mutant of tests/kit/mutants (one classic mistake each; the slow training
mutants of tests/kit/slow_mutants are left out: each trains a model) as the kit's tests
grade them (public tier, the engine of `make grade`), and prints, per mutant, the share of
its module's points it loses: the points of the checks it fails over the module's total.
A mistake should cost the checks that test what it breaks, not a cascade through every
check that happens to run the broken code (DESIGN.md, principles 6 and 10). The budget
(docs/fairness.md, kept by tests/kit/test_mutants_and_alternatives.py): the largest share
at most MAX_SHARE, the median at most MEDIAN_SHARE.

A mutant marked `# breaks: every exercise` (bool tensors from every function: an attack
written as a mutant, not one mistake) is listed apart, outside the distribution. Beside the
share, the tool counts the mutants that lose one check only: no isolation can make those
cheaper, whatever share of a small module that check holds.

The grades come from the record the kit's tests and `make dist` keep (build/model-replays/,
autograder/core/model_replays.py): recorded now where missing or stale (minutes), read back
otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autograder.core import model_replays, paths, registry, syllabus  # noqa: E402

CACHE = paths.BUILD / "model-replays"
# The goal (issue 28.1): one mistake costs at most MAX_SHARE of its module's points, and the
# median mutant at most MEDIAN_SHARE.
MAX_SHARE = 0.60
MEDIAN_SHARE = 0.15
# Where the goal is not met yet, and why (docs/fairness.md): a module, or one mutant
# ("module/mutant"). The kit test keeps every other mutant within MAX_SHARE and the median at
# most MEDIAN_KEPT (what the kit reaches now).
# None now: kvcache/append_wrong_axis, the last one (100%), loses 23.1% since its layer and
# greedy_decode checks judge a run with a working cache made in a forked grandchild.
OVER_MAX: dict[str, str] = {}
# 14.3% (docs/fairness.md, fifth pass): the checks of llama, positional and flash that bundled
# two properties are split, gpt's logits no longer charge the √D scale embed-scale charges, and
# kvcache's wrong-axis cache costs the cache's checks only: 169 of the 330 mutants lose at most
# 15% (the median needs 166), within the goal, MEDIAN_SHARE.
MEDIAN_KEPT = 0.143


def share_lost(module: str, lost: list) -> float:
    """The share of `module`'s points held by the checks in `lost` ([slug, mistake id]...)."""
    points = {c.slug: c.points for c in registry.checks_of(module)}
    total = sum(points.values())
    return sum(points[slug] for slug in {s for s, _ in lost}) / total if total else 0.0


def breaks_everything(module: str, mutant: str) -> bool:
    """Whether tests/kit/mutants/<module>/<mutant>.py says `# breaks: every exercise`."""
    path = ROOT / "tests" / "kit" / "mutants" / module / f"{mutant}.py"
    return path.is_file() and "\n# breaks: every exercise\n" in path.read_text()


def mutant_shares(grades: dict[str, dict[str, list]], *, apart: bool = False) -> dict[str, float]:
    """{"module/mutant": share of its module's points lost} from recorded grades
    ({module: {variant name: [[slug, mistake id], ...]}}, as model_replays records them):
    the one-mistake mutants, or with apart=True those marked `# breaks: every exercise`."""
    found = {}
    for module, graded in grades.items():
        for name, lost in graded.items():
            mutant = name.removeprefix("mutant ")
            if name.startswith("mutant ") and breaks_everything(module, mutant) == apart:
                found[f"{module}/{mutant}"] = share_lost(module, lost)
    return found


def one_check_only(grades: dict[str, dict[str, list]]) -> set[str]:
    """The mutants ("module/mutant") that lose exactly one check."""
    return {
        f"{module}/{name.removeprefix('mutant ')}"
        for module, graded in grades.items()
        for name, lost in graded.items()
        if name.startswith("mutant ") and len({slug for slug, _ in lost}) == 1
    }


def summary(shares: dict[str, float]) -> dict[str, float]:
    values = sorted(shares.values())
    return {
        "mutants": len(values),
        "median": statistics.median(values) if values else 0.0,
        "largest": values[-1] if values else 0.0,
    }


def recorded(modules: list[str]) -> dict[str, dict[str, list]]:
    grades = {}
    for module in modules:
        found = model_replays.recorded_grades(module, CACHE)
        if found is None:  # missing or stale: record every stale module at once
            model_replays.compute(list(syllabus.MODULES), CACHE)
            found = model_replays.recorded_grades(module, CACHE)
        assert found is not None, f"{module}: grading its variants left no record"
        grades[module] = found
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=",".join(syllabus.MODULES))
    parser.add_argument("--top", type=int, default=15, help="list the N costliest mutants")
    args = parser.parse_args(argv)
    grades = recorded(args.modules.split(","))
    shares = mutant_shares(grades)
    stats = summary(shares)
    for name, share in sorted(shares.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{share:6.1%}  {name}")
    print(
        f"{stats['mutants']} mutants: median {stats['median']:.1%} (goal "
        f"{MEDIAN_SHARE:.0%}), largest {stats['largest']:.1%} (goal {MAX_SHARE:.0%})"
    )
    single = one_check_only(grades) & set(shares)
    over = [n for n in single if shares[n] > MEDIAN_SHARE]
    print(
        f"  {len(single)} lose one check only; {len(over)} of them lose more than "
        f"{MEDIAN_SHARE:.0%} (that check alone holds more of its module's points)"
    )
    for name, share in sorted(mutant_shares(grades, apart=True).items()):
        print(f"  apart (# breaks: every exercise): {name} {share:.1%}")
    by_module: dict[str, list[float]] = {}
    for name, share in shares.items():
        by_module.setdefault(name.split("/")[0], []).append(share)
    for module, values in by_module.items():
        print(
            f"  {module:14s} {len(values):3d} mutants  median {statistics.median(values):6.1%}"
            f"  largest {max(values):6.1%}"
        )
    within = stats["largest"] <= MAX_SHARE and stats["median"] <= MEDIAN_SHARE
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
