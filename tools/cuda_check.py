"""Does the kit grade on CUDA as it grades on the CPU? (`python tools/cuda_check.py`, on a
machine with a GPU.)

Grades the solutions (every module, the training runs included) and a sample of mutants with
`python -m autograder grade --device cuda` and again with `--device cpu`, each in a fresh
process (WARM=0), and prints, side by side, each one's score, the checks it lost and their
mistake ids on each device. Exit status 1 when the two devices differ anywhere: the solutions
must get full marks on both, and each mutant must lose the same checks under the same ids.

    python tools/cuda_check.py [--out build/cuda-check] [--mutants 2] [--modules gpt,llama]

--mutants N: the first N mutants of each module (sorted by name); 0 grades the solutions only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "tests" / "kit" / "mutants"


def grade(folder: Path, device: str, results: Path, modules: list[str] | None, slow: bool) -> dict:
    """One `make grade`, fresh process (`slow`: the training runs too): {"score", "max",
    "lost": [(check, its tags)], "rc", "seconds"}, or {"error", "rc", "seconds"}."""
    args = [sys.executable, "-m", "autograder", "--warm", "0", "grade"]
    args += ["--submission", str(folder), "--device", device, "--results", str(results)]
    args += ["--ex", ",".join(modules)] if modules else []
    args += ["--include-slow"] if slow else []
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "LANGUAGE": "en", "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - start
    try:
        data = json.loads(results.read_text())
    except (OSError, ValueError):
        return {
            "rc": proc.returncode,
            "seconds": seconds,
            "error": proc.stdout[-2000:] + proc.stderr[-2000:],
        }
    lost = sorted(
        (t["name"], ",".join(tag for tag in t.get("tags", []) if tag != "waiting"))
        for t in data["tests"]
        if t["score"] < t["max_score"]
    )
    return {
        "rc": proc.returncode,
        "seconds": seconds,
        "score": data["score"],
        "max": data["max_score"],
        "lost": lost,
    }


def variants(per_module: int, modules: list[str]) -> list[tuple[str, str, Path]]:
    found = []
    for folder in sorted(MUTANTS.iterdir()):
        if folder.is_dir() and (not modules or folder.name in modules):
            for path in sorted(folder.glob("*.py"))[:per_module]:
                found.append((folder.name, path.stem, path))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "cuda-check"))
    parser.add_argument("--mutants", type=int, default=2, help="mutants per module (0: none)")
    parser.add_argument("--modules", default="", help="comma-separated (default: all)")
    parser.add_argument("--devices", default="cuda,cpu", help="the two devices compared")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    modules = [m for m in args.modules.split(",") if m]

    first, second = args.devices.split(",")
    import torch

    if "cuda" in args.devices and not torch.cuda.is_available():
        print("this machine has no CUDA device: nothing to compare", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"torch {torch.__version__}, {gpu}", flush=True)

    report, differ = [], 0
    todo = [("solutions", "", None)] + variants(args.mutants, modules)
    for module, name, path in todo:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "submission"
            shutil.copytree(
                ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__")
            )
            if path is not None:
                shutil.copyfile(path, folder / f"{module}.py")
            which = [module] if path is not None else (modules or None)
            labels = (first, second if second != first else f"{second} (again)")
            got = {
                label: grade(folder, device, Path(tmp) / f"{k}.json", which, slow=path is None)
                for k, (label, device) in enumerate(zip(labels, (first, second), strict=True))
            }
        title = f"{module}/{name}" if name else "solutions (training runs included)"
        same = all("error" not in g for g in got.values()) and (
            len({json.dumps([g["lost"], g["score"]]) for g in got.values()}) == 1
        )
        if path is None:  # the solutions: full marks on both
            same = same and all(g["score"] == g["max"] for g in got.values())
        differ += not same
        line = f"{'SAME ' if same else 'DIFF '} {title}: " + "; ".join(
            f"{d} {g.get('score', '?')}/{g.get('max', '?')} in {g['seconds']:.1f} s"
            for d, g in got.items()
        )
        print(line, flush=True)
        if not same:
            for d, g in got.items():
                print(f"      {d}: {g.get('lost', g.get('error'))}", flush=True)
        report.append({"variant": title, "same": same, **got})
    (out / "cuda_check.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(todo)} graded on both devices, {differ} differ", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
