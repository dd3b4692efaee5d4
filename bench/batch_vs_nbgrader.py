"""Time `make batch` against nbgrader autograde on the same submissions (`make bench-batch`).

Builds N students (default 200), half the solutions and half a mutant each (tests/kit/
mutants/, cycling through the graded modules: every module by default), as package folders for
`make batch` and as the equivalent submitted notebooks for nbgrader (the released notebooks
with the student's code in the solution cells), grades both, and prints both times and the
ratio, from one run.

    python bench/batch_vs_nbgrader.py [--n 200] [--out build/bench-batch] [--skip-nbgrader]
        [--modules attention,masks]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODULES: list[str] = []  # --modules (default: every module of the kit)
SOLUTIONS = ROOT / "solutions"
MUTANTS = ROOT / "tests" / "kit" / "mutants"


def mutant_definitions(path: Path) -> str:
    """The mutant's own code, without its `from solutions... import` lines."""
    return re.sub(r"^from solutions\.\w+ import .*$", "", path.read_text(), flags=re.M)


def students(n: int) -> list[tuple[str, str | None, Path | None]]:
    """(name, mutated module or None, mutant file or None), half of them correct."""
    mutants = [(m, p) for m in MODULES for p in sorted((MUTANTS / m).glob("*.py"))]
    found = []
    for i in range(n):
        if i % 2 == 0:
            found.append((f"s{i:03d}", None, None))
        else:
            module, path = mutants[(i // 2) % len(mutants)]
            found.append((f"s{i:03d}", module, path))
    return found


def build_folders(roster, target: Path) -> None:
    for name, module, mutant in roster:
        folder = target / name
        shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
        if mutant is not None:
            text = (SOLUTIONS / f"{module}.py").read_text() + "\n\n" + mutant_definitions(mutant)
            (folder / f"{module}.py").write_text(text)


def _defined_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def build_notebooks(roster, course: Path) -> None:
    """submitted/<student>/<module>/<module>.ipynb: the released notebook, solution cells
    holding the solution's code followed by the mutant's definitions of the same names."""
    import nbformat

    for module in MODULES:
        source = nbformat.read(course / "source" / module / f"{module}.ipynb", as_version=4)
        released = course / "release" / module / f"{module}.ipynb"
        solution_cells = {
            c.metadata["nbgrader"]["grade_id"]: c.source
            for c in source.cells
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")
        }
        for name, mutated, mutant in roster:
            nb = nbformat.read(released, as_version=4)
            extra = mutant_definitions(mutant) if mutated == module else ""
            extra_tree = ast.parse(extra) if extra else None
            for cell in nb.cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if not meta.get("solution"):
                    continue
                cell.source = solution_cells[meta["grade_id"]]
                names = _defined_names(cell.source)
                if extra_tree is not None:
                    for node in extra_tree.body:
                        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
                            cell.source += "\n\n" + ast.get_source_segment(extra, node)
            out = course / "submitted" / name / module / f"{module}.ipynb"
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="number of students")
    parser.add_argument("--out", default="build/bench-batch")
    parser.add_argument("--skip-nbgrader", action="store_true")
    parser.add_argument("--modules", default="", help="comma-separated (default: all)")
    args = parser.parse_args()
    from autograder.core import registry

    MODULES[:] = [m for m in args.modules.split(",") if m] or registry.modules()
    if args.n < 2:
        raise SystemExit("--n must be at least 2")
    out = (ROOT / args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    roster = students(args.n)
    build_folders(roster, out / "submissions")
    # make's verbs with this interpreter's environment (sys.prefix: the venv), whether the
    # bench runs from `make bench-batch` or as a script; --out may be any folder.
    make = ["make", "--no-print-directory", "-C", str(ROOT), f"VENV={sys.prefix}"]
    print(f"{args.n} submissions ({sum(m is None for _, m, _ in roster)} correct) in {out}")
    batch_s = timed(
        make
        + [
            "batch",
            f"SUBMISSIONS={out / 'submissions'}",
            f"BATCH_OUT={out / 'batch'}",
            f"EX={','.join(MODULES)}",
        ]
    )
    meta = json.loads((out / "batch" / "batch.json").read_text())
    print(f"modules: {', '.join(MODULES)}")
    detail = meta.get("isolation_detail", meta["isolation"])
    print(f"make batch:          {batch_s:8.1f} s  ({detail} isolation)")
    if args.skip_nbgrader:
        return 0
    try:
        from autograder.channels.nbgrader import course
    except ImportError as e:
        raise SystemExit(
            f"the nbgrader side (autograder/channels/nbgrader/course.py, issue 6) is not usable "
            f"here: {e}"
        ) from None
    root = out / "course"
    shutil.copytree(ROOT / "course" / "text", root / "text", dirs_exist_ok=True)
    course.write_course(root, MODULES)
    timed(make + ["release", f"COURSE={root}"])
    build_notebooks(roster, root)
    nbgrader_s = timed(make + ["autograde", f"COURSE={root}"])
    graded = len(list((root / "autograded").glob("*/*/*.ipynb")))
    print(f"nbgrader autograde:  {nbgrader_s:8.1f} s  ({graded} notebooks)")
    print(f"ratio:               {nbgrader_s / batch_s:8.1f}x faster with make batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
