"""Does the student copy grade like the instructor's? (`python tools/student_copy_check.py`)

The student copy (`make dist`) leaves out the stand-ins that implement exercises and the
bodies of the judges' models (autograder/authoring/student_copy.py), so it names fewer mistakes. It
must still charge exactly the same checks: this grades the solutions, every alternative and
every mutant of the given modules (public tier, in-process, the engine of `make grade`) once
with the instructor's kit and once with a freshly built student copy, and prints each
variant whose lost checks or mistake ids differ: WRONG where a correct variant loses a
check there or a mutant loses fewer checks there (exit status 1), MORE where a mutant is
charged in more checks there, NAMES where the same checks are lost under other mistake ids
(the copy's models answer only what the kit recorded on the public tier: model_replays.py);
MORE and NAMES give exit status 1 with --strict.

Each variant is graded as `make grade` grades it, checks that wait on an own dependency
included (autograder/run/waiting.py: in the copy, a module runs the student's own blocks.py,
rotary.py, ...; its checks that do not pass WAIT while such a dependency fails its own checks).
A check that waits is neither lost nor passed, so it is listed apart, and any is WRONG: every
dependency here is the solution, which must pass its own checks in both kits, so a check that
waits means the copy failed a correct dependency (and the instructor's kit, which has every
stand-in, never holds a check).

    python tools/student_copy_check.py [--modules gpt,blocks] [--sample N] [--copy DIR] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "tests" / "kit"

# Run in the kit being checked (its autograder/ first on sys.path; solutions/ from ROOT, for
# the mutants' `from solutions.x import ...`).
GRADE = r"""
import json, shutil, sys, tempfile, warnings
from autograder.run.forkserver import quiet_start
quiet_start()  # rare full collections while the kit imports
from pathlib import Path
warnings.filterwarnings("ignore")
from autograder.run.engine import grade
from autograder.run.submission import Submission
from autograder.run.waiting import hold, on
solutions, todo = Path(sys.argv[1]), json.loads(sys.argv[2])
found = {}
# What hold() grades besides the variant's module: its own dependencies, each the solution
# (never the variant's module: a dependency's closure holds no module that depends on it),
# so graded once here for every variant that needs it.
solution_grades = {}
def dependencies(sub, modules):
    for m in modules:
        if m not in solution_grades:
            solution_grades[m] = grade(sub, [m])
    return [r for m in modules for r in solution_grades[m]]
for module, variants in todo.items():
    for name, path in variants.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "submission"
            shutil.copytree(solutions, folder, ignore=shutil.ignore_patterns("__pycache__"))
            if path:
                (folder / f"{module}.py").write_text(Path(path).read_text())
            sub = Submission(folder)
            results = hold(grade(sub, [module]), sub, lambda more: dependencies(sub, more))
        held = [r for r in results if r.status == "waiting"]
        found[f"{module} {name}"] = {
            "lost": sorted(
                (r.check_id.split(".", 1)[1], r.misconception or "")
                for r in results
                if not r.passed and r.status != "waiting"
            ),
            "waiting": sorted(
                (r.check_id.split(".", 1)[1], ",".join(f for f, _ in on(r))) for r in held
            ),
        }
print("RESULT " + json.dumps(found))
"""


def variants_of(module: str, sample: int) -> dict[str, str]:
    found = {"solution": ""}
    for kind in ("alternatives", "mutants"):
        paths = sorted((KIT / kind / module).glob("*.py"))
        if sample:
            paths = paths[:sample]
        found.update({f"{kind[:-1]} {p.stem}": str(p) for p in paths})
    return found


def graded(kit: Path, todo: dict[str, dict[str, str]]) -> dict[str, list]:
    """{"<module> <variant>": {"lost": [(check slug, misconception)], "waiting": [(check
    slug, files it waits on)]}}, graded with `kit`."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(kit), str(ROOT)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANGUAGE": "en",
        "WARM": "0",
        "ATTENTION_LAB_HINT_STATE": str(Path(tempfile.mkdtemp()) / "hints.json"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", GRADE, str(ROOT / "solutions"), json.dumps(todo)],
        cwd=kit,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise SystemExit(f"grading in {kit} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def build_copy(target: Path) -> Path:
    archive = target / "student.tar.gz"
    subprocess.run(
        [sys.executable, "-m", "autograder", "dist", "--out", str(archive)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target / "attention-lab"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default="", help="comma-separated (default: all)")
    parser.add_argument("--sample", type=int, default=0, help="the first N variants of a kind")
    parser.add_argument("--copy", default="", help="an extracted student copy to use")
    parser.add_argument(
        "--strict", action="store_true", help="a mutant charged more or named differently fails"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from autograder.core import model_replays, paths, registry

    modules = [m for m in args.modules.split(",") if m] or registry.modules()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(args.copy) if args.copy else build_copy(Path(tmp))
        todo = {module: variants_of(module, args.sample) for module in modules}
        # The instructor's side: what `make dist` saw while it recorded the models' answers
        # (the same grading, in the same kit), where that record is fresh; else graded now.
        here, again = {}, {}
        for module, variants in todo.items():
            record = model_replays.recorded_grades(module, paths.BUILD / "model-replays")
            if record is not None and set(record) >= set(variants):
                # (every stand-in there: nothing waits)
                here.update({f"{module} {v}": {"lost": record[v], "waiting": []} for v in variants})
            else:
                again[module] = variants
        if again:
            here.update(graded(ROOT, again))
        there = graded(copy, todo)
    worse = more = unnamed = 0
    for name in here:
        held = here[name]["waiting"] + there[name]["waiting"]
        if held:  # every dependency is the solution here: nothing may wait on it
            worse += 1
            print(
                f"WAIT  {name}: checks wait on a dependency (the solution): instructor: "
                f"{here[name]['waiting']}; copy: {there[name]['waiting']}"
            )
            continue
        if here[name]["lost"] == there[name]["lost"]:
            continue
        lost_here = {slug for slug, _ in here[name]["lost"]}
        lost_there = {slug for slug, _ in there[name]["lost"]}
        # A correct variant losing a check, or a mistake going uncharged, is wrong; a
        # mistake charged in more checks (one that only a model could exempt) is MORE; the
        # same checks lost under other names (a mistake the copy cannot name) is NAMES.
        if lost_here == lost_there:
            unnamed, kind = unnamed + 1, "NAMES"
        elif " mutant " not in name or lost_here - lost_there:
            worse, kind = worse + 1, "WRONG"
        else:
            more, kind = more + 1, "MORE "
        print(f"{kind} {name}: instructor: {here[name]['lost']}; copy: {there[name]['lost']}")
    print(f"{len(here)} variants of {len(modules)} modules graded in both kits")
    print(
        f"the student copy charges the same checks with the same mistake ids, except "
        f"{more} mutant(s) charged more, {unnamed} named differently, {worse} wrong"
    )
    differ = worse + (more + unnamed if args.strict else 0)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
