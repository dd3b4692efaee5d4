"""`make batch SUBMISSIONS=dir`: grade a folder of untrusted submissions, in parallel.

Each entry of the folder is one student: a package folder (holding attention.py, masks.py,
...) or a .zip of one. An entry a learning platform named (Canvas, Moodle, Blackboard: lms.py)
is named after the student's part of the name; of several for one student the latest is
graded. Every submission runs in the sandbox (autograder/run/sandbox/): its own process,
forked from a zygote that imported torch once, confined (no solutions/, an unprivileged uid,
memory, time, process and file-size limits); the probes run there and the verdicts run here,
on plain tensors read from a pipe. The hidden tier is the default: each student's inputs come
from their own seed, seeds.student_seed(secret, student), the secret being
course/course.toml's [hidden] secret (made, and said so, when course.toml is missing);
expected outputs are computed from solutions/ here, per student. --seed N gives everyone N.

Writes, under OUT (default build/batch):
    grades.csv                  one row per student: total, per-module scores, notes
    <student>/results.json      Gradescope's format (score, tests[]), plus top-level output
    <student>/feedback.txt      the table `make grade` prints, notes, what the code printed
                                (all three through autograder/feedback/sinks.py, as every channel)
    seeds.csv                   each student's hidden seed (the instructor's; never in feedback)
    batch.json                  how the run was made: tier, seed, isolation, limits, versions,
                                course_toml (a hash of the course.toml it read)
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
import unicodedata
import zipfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import course_config, paths, registry, seeds
from ..core.settings import Settings, SettingsError
from ..feedback import sinks
from ..feedback.sinks import cell, one_line, plain  # noqa: F401 (batch's names for them)
from ..run.sandbox.jail import Limits
from . import lms
from .options import modules_of

if TYPE_CHECKING:
    from ..run.sandbox.runner import Graded

MAX_ZIP_MEMBERS, MAX_ZIP_BYTES = 2000, 50 << 20


class BatchError(Exception):
    """The batch cannot run: a plain message for the instructor."""


class NotGraded(Exception):
    """One submission cannot be graded (its .zip cannot be unpacked...): a plain reason."""


# Names the batch writes in OUT itself: a student folder may not take them.
RESERVED = {"grades.csv", "batch.json"}


# --------------------------------------------------------------------------- submissions


def student_name(path: Path) -> str:
    """The student of a submission: its name, or the student's part of a learning platform's
    name (Canvas's `smithjohn_LATE_123_456_x.zip` -> smithjohn, lms.py)."""
    download = lms.parse(path.name)
    stem = path.name[: -len(".zip")] if path.name.lower().endswith(".zip") else path.name
    stem = download.who if download else stem
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", stem).strip(".") or "student"


def latest_per_student(found: list[Path]) -> tuple[list[Path], list[str]]:
    """One submission per student: of a learning platform's several downloads for one student
    (Canvas's re-uploads, -1, -2), the highest resubmission, then the newest file; the
    others are named in the notes. Submissions without such a name are all kept."""
    best: dict[str, tuple[tuple[int, float], Path]] = {}
    for path in found:
        download = lms.parse(path.name)
        if download is None:
            continue
        rank = (download.resubmission, path.stat().st_mtime)
        name = student_name(path)
        if name not in best or rank > best[name][0]:
            best[name] = (rank, path)
    kept = {p for _, p in best.values()}
    left = [p for p in found if lms.parse(p.name) and p not in kept]
    notes = [
        f"{plain(p.name)}: left out, {plain(best[student_name(p)][1].name)} is the later one"
        for p in left
    ]
    return [p for p in found if p not in left], notes


def find_submissions(folder: Path, skip: Iterable[Path] = ()) -> list[Path]:
    """The submissions in `folder`: sub-folders and .zip files, sorted by name."""
    if not folder.is_dir():
        raise BatchError(f"SUBMISSIONS={str(folder)!r} is not a folder of submissions")
    skipped = {p.resolve() for p in skip}
    found = [
        p
        for p in sorted(folder.iterdir())
        if not p.name.startswith((".", "_"))
        and p.resolve() not in skipped
        and (p.is_dir() or (p.is_file() and p.name.lower().endswith(".zip")))
    ]
    modules = registry.modules()
    if not found and any((folder / f"{m}.py").is_file() for m in modules):
        raise BatchError(
            f"{folder} looks like one submission (it holds the module files); put each "
            "student's folder or .zip in a folder and pass that folder as SUBMISSIONS"
        )
    if not found:
        raise BatchError(f"{folder} holds no submissions (sub-folders or .zip files)")
    return found


def _unzip_problem(e: BaseException | None, info: zipfile.ZipInfo | None = None) -> str:
    """Why a .zip cannot be read, in words."""
    if info is not None and info.flag_bits & 0x1:
        if info.compress_type == 99:
            return "it is AES-encrypted (a password-protected .zip): upload it without a password"
        return "it is password-protected: upload it without a password"
    if isinstance(e, UnicodeDecodeError):
        return "a file name in it is not valid UTF-8: rename the files and zip them again"
    if isinstance(e, NotImplementedError):
        return f"it uses a compression method this grader cannot read ({plain(str(e), 80)})"
    if isinstance(e, zipfile.BadZipFile):
        return f"it is not a valid .zip file ({plain(str(e), 80)})"
    return f"{type(e).__name__}: {plain(str(e), 120)}"


def extract_zip(archive: Path, target: Path) -> list[str]:
    """Unpack a student's .zip safely (no absolute paths, no '..', no links, size-capped).
    Raises NotGraded when the archive cannot be read at all (encrypted, corrupt...)."""
    notes = []
    shown = plain(archive.name)
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                return [f"{shown} holds more than {MAX_ZIP_MEMBERS} files: not unpacked"]
            total = 0
            for info in members:
                name = info.filename
                parts = Path(name).parts
                if info.is_dir() or name.startswith("__MACOSX") or not parts:
                    continue
                if name.startswith("/") or ".." in parts or ":" in name or "\\" in name:
                    notes.append(f"{plain(name)}: unsafe path in the .zip, left out")
                    continue
                if any(unicodedata.category(ch)[0] == "C" for ch in name):
                    notes.append(f"{plain(name)}: a file name with control characters, left out")
                    continue
                if stat.S_ISLNK(info.external_attr >> 16):
                    notes.append(f"{plain(name)}: a link in the .zip, left out")
                    continue
                if info.flag_bits & 0x1:
                    raise NotGraded(f"{shown} could not be unpacked: {_unzip_problem(None, info)}")
                total += info.file_size
                if total > MAX_ZIP_BYTES:
                    notes.append(f"{shown} unpacks to more than 50 MB: rest left out")
                    break
                dest = target / Path(*parts)
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as src, open(dest, "wb") as out:
                        shutil.copyfileobj(src, out)
                except (OSError, ValueError) as e:  # a name the file system refuses...
                    notes.append(f"{plain(name)}: could not be unpacked ({plain(str(e), 80)})")
    except NotGraded:
        raise
    except Exception as e:  # BadZipFile, RuntimeError, NotImplementedError, UnicodeDecodeError
        raise NotGraded(f"{shown} could not be unpacked: {_unzip_problem(e)}") from None
    return notes


def package_folder(root: Path) -> Path:
    """The folder holding the module files: root itself, or the shallowest one below it."""
    modules = registry.modules()
    best = None
    for dirpath, dirs, _files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        here = Path(dirpath)
        if any((here / f"{m}.py").is_file() for m in modules):
            depth = len(here.relative_to(root).parts)
            if best is None or depth < best[0]:
                best = (depth, here)
    return best[1] if best else root


# --------------------------------------------------------------------------- outputs


def not_graded(name: str, reason: str) -> Graded:
    from ..run.sandbox.runner import Graded

    return Graded(name, [], notes=[f"not graded: {reason}"], not_graded=reason)


# --------------------------------------------------------------------------- progress


class Progress:
    """A one-line progress bar on stderr (a line per 10% when stderr is not a terminal)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.stream = total, 0, stream
        self.start = time.monotonic()
        self.tty = stream.isatty()
        self.last_decile = -1

    def step(self, name: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        bar = "#" * (30 * self.done // self.total)
        line = (
            f"[{bar:<30}] {self.done}/{self.total} graded  {elapsed:5.1f} s  "
            f"ETA {eta:4.0f} s  {name[:30]}"
        )
        if self.tty:
            self.stream.write("\r" + line.ljust(100))
            if self.done == self.total:
                self.stream.write("\n")
        elif 10 * self.done // self.total != self.last_decile:
            self.last_decile = 10 * self.done // self.total
            self.stream.write(line + "\n")
        self.stream.flush()


# --------------------------------------------------------------------------- the batch


def write_seeds(student_seeds: dict[str, int], path: Path) -> None:
    """The instructor's record of each student's hidden seed (a regrade keeps other rows)."""
    rows: dict[str, str] = {}
    if path.is_file():
        with open(path, newline="") as f:
            rows = {r["student"]: r["seed"] for r in csv.DictReader(f) if "student" in r}
    rows.update({name: str(seed) for name, seed in student_seeds.items()})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "seed"])
        for name in sorted(rows):
            writer.writerow([cell(name), rows[name]])
    path.chmod(0o600)


def run(
    submissions: Path,
    out: Path,
    *,
    modules: list[str] | None = None,
    jobs: int | None = None,
    seed: int | None = None,
    public: bool = False,
    limits: Limits | None = None,
    progress: bool = True,
    students: list[str] | None = None,
    insecure: bool = False,
    sandbox_mode: str = "",
) -> list[Graded]:
    from ..run.sandbox.jail import SandboxUnavailable
    from ..run.sandbox.zygote import Zygote

    submissions, out = Path(submissions), Path(out)
    found, superseded = latest_per_student(find_submissions(submissions, skip=[out]))
    for note in superseded:
        print(note, file=sys.stderr)
    if students:
        found = [p for p in found if student_name(p) in students]
        missing = sorted(set(students) - {student_name(p) for p in found})
        if missing:
            raise BatchError(f"STUDENT={missing[0]!r} has no submission in {submissions}")
    recorded = out / "batch.json"
    if seed is None and not public and recorded.is_file():
        try:  # a regrade into the same OUT reuses the recorded hidden seed
            seed = int(json.loads(recorded.read_text())["seed"])
            print(f"reusing the hidden seed recorded in {recorded}", file=sys.stderr)
        except (ValueError, KeyError, TypeError):
            seed = None
    secret = ""
    if seed is None and not public:  # each student's own hidden seed, from the secret
        try:
            secret, made = seeds.course_secret()
        except (seeds.SecretMissing, ValueError) as e:
            raise BatchError(str(e)) from None
        if made:
            print(
                "made course/course.toml with a new hidden-seed secret: keep it (regrades "
                "derive the same seeds from it), never hand it out",
                file=sys.stderr,
            )
    modules = modules or registry.modules()
    # One submission more than cores: each slot leaves a core idle while it judges and sets
    # up its next sandbox; a third slot on two cores fills those gaps.
    jobs = max(1, min(jobs or (os.cpu_count() or 1) + 1, len(found)))
    started = time.monotonic()
    # First: the zygote's torch import and warm-up run beside this process's own; the hidden
    # tier's reference servers (one per slot) start as soon as its torch is warm.
    zygote = Zygote(warm_up=True, servers=0 if public else jobs)
    try:
        from ..run.sandbox.runner import Sandbox  # imports torch

        out.mkdir(parents=True, exist_ok=True)
        unpacked = Path(tempfile.mkdtemp(prefix="attention-lab-batch-"))
    except BaseException:
        zygote.close(kill=True)
        raise
    hide = [submissions, out, unpacked]
    names: set[str] = set()
    graded: list[Graded] = []
    try:  # the Sandbox owns the zygote from here on
        sandbox = Sandbox(
            modules,
            seed=seed,
            public=public,
            limits=limits,
            hide=hide,
            slots=jobs,
            insecure=insecure,
            per_student=bool(secret),
            slow=True,  # every check: each module's one total (sinks.module_max)
            zygote=zygote,
            sandbox_mode=sandbox_mode,
        )
    except SandboxUnavailable as e:
        shutil.rmtree(unpacked, ignore_errors=True)
        raise BatchError(str(e)) from None
    with sandbox as sb:
        warning = insecure_note = sb.isolation.warning()
        if warning:
            print(warning, file=sys.stderr)
        # Never the seed: it is the instructor's (seeds.csv, batch.json).
        tier = "public tier (stored fixtures)" if public else "hidden tier (fresh inputs)"
        student_seeds: dict[str, int] = {}
        title_of = lambda name: f"Attention Lab: {name}, {tier}"  # noqa: E731
        grades = sinks.GradesCsv(out / "grades.csv", modules)  # a row as each one is graded

        def one(path: Path, name: str) -> Graded:
            try:
                notes, folder = [], path
                if path.is_file():
                    folder = unpacked / name
                    folder.mkdir()
                    notes = extract_zip(path, folder)
                own = student_seeds[name] if secret else None
                g = sb.grade(package_folder(folder), name, seed=own)
                g.notes[:0] = notes
            except NotGraded as e:
                g = not_graded(name, str(e))
            except Exception as e:  # a grader bug on one upload costs that upload only
                print(f"grading {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
                g = not_graded(name, f"grader error ({type(e).__name__}: {plain(str(e))})")
            if insecure_note:
                g.notes.insert(0, insecure_note)
            result_set = sinks.ResultSet.of_graded(g, title_of(name))  # shares g's notes
            files: list[sinks.Sink] = [sinks.GradescopeJson(out / name / "results.json")]
            files.append(sinks.FeedbackText(out / name / "feedback.txt"))
            try:
                sinks.publish(result_set, [*files, grades])
            except Exception as e:
                g.notes.append(f"its feedback could not be written: {plain(str(e))}")
                grades.publish(result_set)  # its row, with the note
            return g

        bar = Progress(len(found)) if progress else None
        try:
            with ThreadPoolExecutor(jobs) as pool:
                futures = {}
                for path in found:
                    name = student_name(path)
                    while name in names or name.lower() in RESERVED:
                        name += "_"
                    names.add(name)
                    if secret:
                        student_seeds[name] = seeds.student_seed(secret, name)
                    futures[pool.submit(one, path, name)] = name
                for future in as_completed(futures):
                    graded.append(future.result())
                    if bar:
                        bar.step(futures[future])
        finally:
            shutil.rmtree(unpacked, ignore_errors=True)
        if secret:
            write_seeds(student_seeds, out / "seeds.csv")
        import torch

        meta = {
            "submissions": len(graded),
            "tier": "public" if public else "hidden",
            "seed": "per-student (seeds.csv)" if secret else sb.seed,
            "isolation": sb.isolation.mode,
            "isolation_detail": sb.isolation.summary(),
            "insecure": sb.isolation.insecure,
            "missing": sb.isolation.missing,
            "isolation_warning": warning,
            "uids": sb.uids.uids if sb.uids else [],
            "limits": asdict(sb.limits),
            "jobs": jobs,
            "modules": modules,
            "torch": torch.__version__,
            "course_toml": course_config.file_hash(paths.ROOT / "course" / course_config.FILE),
            "seconds": round(time.monotonic() - started, 2),
        }
        (out / "batch.json").write_text(json.dumps(meta, indent=1) + "\n")
    return graded


# --------------------------------------------------------------------------- CLI


def cmd_batch(args) -> int:
    wanted = modules_of(args.ex)
    if args.jobs is not None and args.jobs <= 0:
        print(f"error: --jobs must be positive, got {args.jobs}", file=sys.stderr)
        return 2
    try:  # the flags over ATTENTION_LAB_* over course/course.toml's [limits] (settings.py)
        settings = Settings.resolve(
            cli_args=args,
            environ=os.environ,
            course_toml=paths.ROOT / "course" / course_config.FILE,
        )
    except SettingsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    limits = Limits.of(settings)
    # SIGTERM (a CI timeout, kill): unwind, so that the sandbox kills its processes and
    # removes its cgroups and temporary folders.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        graded = run(
            Path(args.submissions),
            Path(args.out),
            modules=wanted or None,
            jobs=args.jobs,
            seed=args.seed,
            public=args.public,
            limits=limits,
            progress=not args.quiet,
            students=args.student,
            insecure=settings.insecure,
            sandbox_mode=settings.sandbox_mode,
        )
    except BatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    meta = json.loads((Path(args.out) / "batch.json").read_text())
    full = sum(g.score == g.max_score and not g.not_graded for g in graded)
    failed = sum(bool(g.not_graded) for g in graded)
    print(
        f"graded {len(graded)} submissions in {meta['seconds']} s ({meta['tier']} tier, "
        f"{meta['isolation_detail']} isolation, {meta['jobs']} jobs); {full} with full marks"
        + (f"; {failed} not graded (see grades.csv)" if failed else "")
    )
    print(f"wrote {Path(args.out) / 'grades.csv'} and, per student, results.json and feedback.txt")
    return 0


def add_verbs(verbs) -> None:
    """`python -m autograder batch ...` (what `make batch` calls)."""
    d = Limits()
    p = verbs.add_parser("batch", help="grade a folder of submissions in the sandbox")
    p.add_argument("--submissions", required=True, help="folder of package folders / .zips")
    p.add_argument("--out", default="build/batch")
    p.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    p.add_argument(
        "--jobs", type=int, default=None, help="submissions graded at once (default: cores + 1)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="one hidden-tier seed for everyone (default: each student's own)",
    )
    p.add_argument("--public", action="store_true", help="grade the public tier instead")
    # None: not given (the environment, course.toml's [limits], then jail.Limits decide)
    p.add_argument(
        "--timeout", type=float, default=None, help=f"seconds per submission ({d.timeout:g})"
    )
    p.add_argument("--check-timeout", type=float, default=None, help=f"({d.check_timeout:g} CPU-s)")
    p.add_argument(
        "--memory",
        dest="memory_mb",
        type=float,
        default=None,
        help=f"MiB per submission ({d.memory >> 20})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    p.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="grade even where student code cannot be isolated (every result says so)",
    )
    p.set_defaults(run=cmd_batch)
