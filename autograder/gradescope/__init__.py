"""Gradescope: `make gradescope` builds autograder.zip; run_autograder grades one upload.

autograder.zip holds setup.sh and run_autograder (from this folder), requirements.lock, the
autograder/ package and solutions/ (for the hidden tier's reference outputs). Gradescope
unpacks it into /autograder/source, runs setup.sh once, then run_autograder per submission,
which calls `python -m autograder gradescope-run`: the upload in /autograder/submission is
graded in the sandbox (hidden tier: a fresh seed per run; verdicts outside the sandbox) and
/autograder/results/results.json is written. ATTENTION_LAB_GRADESCOPE_ROOT moves the root.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ROOT_ENV = "ATTENTION_LAB_GRADESCOPE_ROOT"
SHIPPED = ("autograder", "solutions")
CONFIG = "attention_lab.json"  # in the zip: the modules to grade (`make gradescope EX=...`)
# Environment overrides of the limits (seconds, seconds, MiB), e.g. for a simulated run.
LIMIT_ENV = {
    "timeout": "ATTENTION_LAB_TIMEOUT",
    "check_timeout": "ATTENTION_LAB_CHECK_TIMEOUT",
    "memory": "ATTENTION_LAB_MEMORY_MB",
}


def zip_members() -> list[tuple[Path, str]]:
    """(file on disk, name in the zip) for everything autograder.zip holds."""
    members = [(HERE / "setup.sh", "setup.sh"), (HERE / "run_autograder", "run_autograder")]
    members.append((ROOT / "requirements.lock", "requirements.lock"))
    for folder in SHIPPED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                members.append((path, path.relative_to(ROOT).as_posix()))
    return members


def build(out: Path, modules: list[str] | None = None) -> Path:
    if not (ROOT / "solutions" / "__init__.py").is_file():
        raise FileNotFoundError(
            "solutions/ is not here (the student copy?): autograder.zip needs the solutions "
            "to compute the hidden tier's reference outputs"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, name in zip_members():
            info = zipfile.ZipInfo.from_file(path, name)
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            with open(path, "rb") as f:
                zf.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
        zf.writestr(CONFIG, json.dumps({"modules": modules or []}) + "\n")
    return out


def limits_from_env():
    from ..sandbox.jail import Limits

    limits = Limits()
    for name, var in LIMIT_ENV.items():
        if os.environ.get(var):
            value = float(os.environ[var])
            setattr(limits, name, int(value) << 20 if name == "memory" else value)
    return limits


INSECURE_ENV = "ATTENTION_LAB_INSECURE"  # "1": grade even without isolation (results say so)


def _write_results(path: Path, data: dict) -> None:
    data["stdout_visibility"] = "hidden"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def run(root: Path) -> int:
    """Grade root/submission into root/results/results.json (what run_autograder calls).
    results.json is written whatever happens: a refused sandbox, an unreadable upload or a
    grader bug give a score of 0 and a plain line saying why."""
    from ..batch import NotGraded, extract_zip, feedback_text, package_folder, plain, results_json
    from ..sandbox.jail import SandboxUnavailable
    from ..sandbox.runner import Sandbox

    submission, results = root / "submission", root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    unpacked = Path(tempfile.mkdtemp(prefix="attention-lab-upload-"))
    insecure = os.environ.get(INSECURE_ENV) == "1"
    try:
        notes = []
        zips = sorted(submission.glob("*.zip")) if submission.is_dir() else []
        folder = package_folder(submission) if submission.is_dir() else unpacked
        if not any(folder.glob("*.py")) and len(zips) == 1:  # a .zip uploaded as it is
            notes = extract_zip(zips[0], unpacked)
            folder = package_folder(unpacked)
        hide = [submission, results.parent, root / "submission_metadata.json", unpacked]
        config = root / "source" / CONFIG
        modules = json.loads(config.read_text())["modules"] if config.is_file() else []
        sandbox = Sandbox(
            modules or None,
            limits=limits_from_env(),
            hide=hide,
            insecure=insecure,
            need_cgroups=False,  # one upload per container
        )
        # Closing the sandbox kills every process of its uid: only then is results.json
        # written, so nothing the student started can rewrite it.
        with sandbox as sb:
            warning = sb.isolation.warning()
            graded = sb.grade(folder, "submission")
        graded.notes[:0] = notes
        if warning:
            graded.notes.insert(0, warning)
        if not any(folder.glob("*.py")) and not graded.not_graded:
            graded.notes.insert(0, "No Python files were found in your upload.")
    except SandboxUnavailable as e:
        _write_results(results, {"score": 0, "tests": [], "output": _REFUSED})
        print(f"error: {e}")
        return 0
    except NotGraded as e:
        _write_results(results, {"score": 0, "tests": [], "output": f"Not graded: {e}."})
        print(f"not graded: {e}")
        return 0
    except Exception as e:
        output = f"Not graded: the autograder failed ({type(e).__name__}: {plain(str(e))})."
        _write_results(results, {"score": 0, "tests": [], "output": output})
        traceback.print_exc(file=sys.stdout)
        return 0
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
    _write_results(results, results_json(graded))
    # stdout is shown to instructors only: the full feedback, and how the run was made.
    print(feedback_text(graded, f"Attention Lab: hidden tier (seed {sb.seed})"))
    print(f"isolation: {sb.isolation.summary()}. {warning}".strip())
    return 0


_REFUSED = (
    "Not graded: this autograder cannot isolate student code in its container, so it "
    "refused to run your code. Your instructor has been told (the autograder's output "
    "says what is missing)."
)


def cmd_build(args) -> int:
    from .. import registry

    wanted = [m.strip().removesuffix(".py") for m in args.ex.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in registry.modules()]
    if unknown:
        print(f"error: EX={args.ex!r}: unknown module {unknown[0]!r}", file=sys.stderr)
        return 2
    out = build(Path(args.out), wanted)
    print(f"wrote {out} (setup.sh, run_autograder, requirements.lock, autograder/, solutions/)")
    return 0


def cmd_run(args) -> int:
    root = Path(args.root or os.environ.get(ROOT_ENV) or "/autograder")
    if not root.is_dir():
        print(f"error: the Gradescope root {str(root)!r} is not a folder", file=sys.stderr)
        return 2
    return run(root)


def add_verbs(verbs) -> None:
    b = verbs.add_parser("gradescope", help="build autograder.zip for Gradescope")
    b.add_argument("--out", default="build/autograder.zip")
    b.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    b.set_defaults(run=cmd_build)
    r = verbs.add_parser("gradescope-run", help="grade /autograder/submission (Gradescope)")
    r.add_argument("--root", default=None, help=f"default ${ROOT_ENV} or /autograder")
    r.set_defaults(run=cmd_run)
