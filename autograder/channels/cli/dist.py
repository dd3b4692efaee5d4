"""`python -m autograder dist` (make dist): the student copy (no solutions) as a .tar.gz, its
files those on authoring/student_copy.py's SHIPS."""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
from pathlib import Path

from ...authoring import student_copy
from ...core import paths, syllabus
from ...core.errors import UsageError
from ...core.paths import ROOT
from ...trusted import NOT_IN_STUDENT_COPY


def register(verbs) -> None:
    dist = verbs.add_parser("dist", help="build the student copy")
    dist.add_argument("--out", default="build/attention-lab-student.tar.gz")
    dist.add_argument(
        "--record",
        metavar="MODULES",
        help="record the judges' model answers of these modules only (comma-separated; "
        "default: every module whose cached answers are stale); the others ship theirs if "
        "fresh, else none",
    )
    dist.set_defaults(run=run)


def kit_files() -> list[str]:
    """Every file of the kit: git's, and the new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    return sorted(f for f in listed if f and (ROOT / f).is_file())


def dist_files() -> list[str]:
    """The student copy's files: the kit's files on student_copy.SHIPS. Raises UsageError
    when a file is on neither SHIPS nor STAYS (someone must decide where it goes)."""
    shipped, unlisted = student_copy.classify(kit_files())
    if unlisted:
        raise UsageError(
            f"{len(unlisted)} file(s) of the kit are on neither list of autograder/"
            "student_copy.py: SHIPS (in the student copy) or STAYS (with the instructor). "
            "Add each to the one it belongs to:\n  " + "\n  ".join(unlisted)
        )
    return shipped


def run(args: argparse.Namespace) -> int:
    files = dist_files()  # before anything is written: it refuses unlisted files
    # What the left-out models answer in the copy: recorded on the trusted side by grading
    # every variant on the public tier (model_replays.py; cached in build/model-replays/).
    from ...core import model_replays

    print("recording what the judges' models answer on the public tier (cached once done)...")
    record = set(args.record.split(",")) if args.record is not None else None
    modules = list(syllabus.MODULES)
    answers = model_replays.compute(modules, paths.BUILD / "model-replays", record=record)
    if record is not None and set(answers) != set(modules):
        missing = ", ".join(sorted(set(modules) - set(answers)))
        print(f"note: no recorded model answers ship for {missing} (not recorded now: --record)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for name in files:
            data = student_copy.copied(name, (ROOT / name).read_bytes())
            info = tar.gettarinfo(ROOT / name, arcname=f"attention-lab/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for path in sorted(p for recorded in answers.values() for p in recorded):
            info = tar.gettarinfo(path, arcname=f"attention-lab/autograder/fixtures/{path.name}")
            with path.open("rb") as f:
                tar.addfile(info, f)
    partial.replace(out)
    print(
        f"wrote {out} (student copy: the files on autograder/authoring/student_copy.py's SHIPS; no "
        f"solutions/, no kit tests, no stand-ins that implement "
        f"{', '.join(NOT_IN_STUDENT_COPY)}; the judges' models as the answers they gave)"
    )
    return 0
