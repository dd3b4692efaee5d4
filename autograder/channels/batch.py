"""`make batch SUBMISSIONS=dir`: grade a folder of untrusted submissions, in parallel.

Each entry of the folder is one student: a package folder (holding attention.py, masks.py,
...) or a .zip of one. An entry a learning platform named (Canvas, Moodle, Blackboard: lms.py)
is named after the student's part of the name; of several for one student the latest is
graded. Every submission runs in the sandbox (autograder/run/sandbox/): its own process per
module, forked from a zygote that imported torch once, confined (no solutions/, an
unprivileged uid, memory, time, process and file-size limits); the probes run there and the
verdicts run here, on plain tensors read from a pipe. The hidden tier is the default: each
attempt's inputs come from its own seed, seeds.student_seed(secret, student, attempt): the
secret is course/course.toml's [hidden] secret (made, and said so, when course.toml is
missing), the attempt id a digest of the files handed in (seeds.attempt_id: the same files,
the same inputs; changed code, new ones); expected outputs are computed from solutions/ here,
per student, and never shown: feedback names the mistake and shows the student's own values.
--seed N gives everyone N.

Writes, under OUT (default build/batch):
    grades.csv                  one row per student: total, per-module scores, notes
    <student>/results.json      Gradescope's format (score, tests[]), plus top-level output
    <student>/feedback.txt      the table `make grade` prints, notes, what the code printed
                                (all three through autograder/feedback/sinks.py, as every channel)
    seeds.csv                   each student's hidden seed and attempt id (the instructor's;
                                never in feedback)
    batch.json                  how the run was made: tier, seed, isolation, limits, versions,
                                course_toml (a hash of the course.toml it read)
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
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
from typing import TYPE_CHECKING, Any

from ..core import course_config, paths, registry, seeds
from ..core.settings import Settings
from ..feedback import sinks
from ..feedback.sinks import cell, one_line, plain  # noqa: F401 (batch's names for them)
from ..run.sandbox.jail import Limits
from . import lms

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
    name (Canvas's `smithjohn_LATE_123_456_x.zip` -> smithjohn, lms.py). Letters and digits
    of any script are kept (Müller and Möller are two rows, not `M_ller` and `M_ller_`), a
    name's decomposed accents (a Mac's zip) composed first; anything else becomes `_`."""
    download = lms.parse(path.name)
    stem = path.name[: -len(".zip")] if path.name.lower().endswith(".zip") else path.name
    stem = unicodedata.normalize("NFC", download.who if download else stem)
    return re.sub(r"[^\w.@+-]", "_", stem).strip(".") or "student"


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


# The loose files of a submissions folder that are graded (a learning platform's download of
# the students' files: gather_loose); anything else loose there is named and left out.
LOOSE = (".py", ".ipynb")


def gather_loose(folder: Path, into: Path) -> tuple[list[Path], list[str]]:
    """The loose .py and .ipynb files of `folder` that a learning platform named after their
    student (Canvas's `smithjohn_123456_7891011_masks.py`, Moodle's `John Smith_4321_
    assignsubmission_file_masks.ipynb`, Blackboard's `<assignment>_jsmith_attempt_<time>_
    masks.py`): a folder per student under `into`, named as student_name names the files,
    each file under the name the student gave it (of one uploaded again, Canvas's highest
    `-N`; of Blackboard's attempts, the latest attempt's files only). Returns the folders and
    the notes: the loose files left out, and why."""
    picked: dict[str, dict[tuple[float, str], tuple[tuple[int, float], Path]]] = {}
    attempts: dict[str, float] = {}
    notes = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.name.startswith(".") or path.is_symlink() or not path.is_file():
            continue
        if not path.name.lower().endswith(LOOSE):
            continue
        if path.stat().st_size > MAX_ZIP_BYTES:  # as a .zip's files: 50 MB at most
            notes.append(f"{plain(path.name)}: left out: larger than {MAX_ZIP_BYTES >> 20} MB")
            continue
        download = lms.parse(path.name)
        own = Path(download.file).name if download else ""
        if download is None or not own or own.startswith("."):
            notes.append(
                f"{plain(path.name)}: left out: a loose file no learning platform named after "
                "a student (put each student's files in a folder or a .zip of their own)"
            )
            continue
        name = student_name(path)
        when = download.when.timestamp() if download.when else 0.0
        attempts[name] = max(attempts.get(name, when), when)
        rank = (download.resubmission, path.stat().st_mtime)
        files = picked.setdefault(name, {})
        if (when, own) not in files or rank > files[when, own][0]:
            files[when, own] = (rank, path)
    made = []
    for name, files in sorted(picked.items()):
        target = into / name
        target.mkdir(parents=True, exist_ok=True)
        for (when, own), (_rank, path) in sorted(files.items()):
            if when != attempts[name]:
                notes.append(f"{plain(path.name)}: left out, an earlier attempt of {name}")
                continue
            shutil.copyfile(path, target / own)
        made.append(target)
    return made, notes


def find_submissions(
    folder: Path, skip: Iterable[Path] = (), loose: Iterable[Path] = ()
) -> list[Path]:
    """The submissions in `folder`: sub-folders and .zip files, and the folders gather_loose
    made of its loose files (`loose`), sorted by name."""
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
    found = sorted([*found, *loose], key=lambda p: p.name)
    modules = registry.modules()
    if not found and any((folder / f"{m}.py").is_file() for m in modules):
        raise BatchError(
            f"{folder} looks like one submission (it holds the module files); put each "
            "student's folder or .zip in a folder and pass that folder as SUBMISSIONS"
        )
    if not found:
        raise BatchError(
            f"{folder} holds no submissions (sub-folders, .zip files, or .py and .ipynb files "
            "a learning platform named after their students)"
        )
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
                # a backslash is a Windows separator (zips made by Windows tools): mysub\\a.py
                name = info.filename.replace("\\", "/")
                parts = Path(name).parts
                if info.is_dir() or name.startswith("__MACOSX") or not parts:
                    continue
                if name.startswith("/") or ".." in parts or ":" in name:
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


def _module_folders(root: Path) -> dict[Path, list[str]]:
    """Every folder of `root` (itself included) that holds module files, with their names;
    hidden folders and `__MACOSX`-like ones left out."""
    modules = registry.modules()
    found: dict[Path, list[str]] = {}
    for dirpath, dirs, _files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        here = Path(dirpath)
        names = [f"{m}.py" for m in modules if (here / f"{m}.py").is_file()]
        if names:
            found[here] = names
    return found


def package_folder(root: Path) -> Path:
    """The folder holding the module files: root itself, or the shallowest one below it; of
    several as shallow (`hw3/` beside `hw3_old/`), the one with the most module files, then
    the one changed last (package_folder_notes names the others)."""
    found = _module_folders(root)
    if not found:
        return root

    def rank(folder: Path) -> tuple[int, int, float, str]:
        newest = max((folder / n).stat().st_mtime for n in found[folder])
        return (-len(folder.relative_to(root).parts), len(found[folder]), newest, str(folder))

    return max(found, key=rank)


def package_folder_notes(root: Path, chosen: Path) -> list[str]:
    """A note for each folder of the upload, besides the one graded, that holds module files:
    they are not graded, and the student should know which copy was."""
    notes = []
    for folder, names in _module_folders(root).items():
        if folder == chosen:
            continue
        where = plain(str(folder.relative_to(root)) or ".") + "/"
        graded = plain(str(chosen.relative_to(root)) or ".") + "/"
        shown = ", ".join(plain(n) for n in names[:4]) + (", ..." if len(names) > 4 else "")
        notes.append(f"{where} also holds module files ({shown}): not graded; {graded} is")
    return notes[:10]


# --------------------------------------------------------------------------- notebooks

MAX_NOTEBOOK_BYTES = 20 << 20


class _Node(dict):
    """A notebook's JSON as nbformat's NotebookNode reads (attribute access): what
    module_source reads, without nbformat (not in Gradescope's and PrairieLearn's images)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def read_notebook(path: Path) -> _Node:
    """A student's .ipynb (nbformat 4), bounded and typed: its cells' type, source, id and
    nbgrader metadata, nothing else. Raises ValueError saying why it cannot be read."""
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested too deep
        raise ValueError(f"not a notebook file ({plain(str(e), 80)})") from None
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        raise ValueError("not a Jupyter notebook in nbformat 4")
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    kept = []
    for c in cells:
        if not isinstance(c, dict):
            continue
        source = c.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        meta = c.get("metadata")
        grader = meta.get("nbgrader") if isinstance(meta, dict) else None
        grader = {
            k: v
            for k, v in (grader.items() if isinstance(grader, dict) else [])
            if k in ("grade_id", "solution", "grade", "locked") and isinstance(v, (str, bool))
        }
        cell: dict[str, Any] = {"cell_type": str(c.get("cell_type", "")), "source": str(source)}
        cell["metadata"] = _Node({"nbgrader": _Node(grader)} if grader else {})
        if isinstance(c.get("id"), str):
            cell["id"] = c["id"]
        kept.append(_Node(cell))
    return _Node({"cells": kept, "metadata": _Node(), "nbformat": 4, "nbformat_minor": 5})


def notebook_module(name: str) -> str | None:
    """The exercise module a notebook's file name names: <module>.ipynb, or a name an LMS
    or a browser made of it (judy_LATE_123_456_masks.ipynb, masks (1).ipynb)."""
    stem = re.sub(r"\s*\(\d+\)$", "", name[: -len(".ipynb")])
    for module in sorted(registry.modules(), key=len, reverse=True):
        if stem == module or stem.endswith((f"_{module}", f"-{module}", f" {module}")):
            return module
    return None


def with_notebooks(root: Path, target: Path) -> tuple[Path, list[str]]:
    """An upload's notebooks graded the way `make autograde` grades them: each one of a
    module without a .py in the upload becomes <module>.py, its code extracted by the kit's
    one extractor (channels/nbgrader/autograde.module_source). Returns the folder to grade
    (root's package folder, or `target`: a copy of it with the extracted modules) and notes
    saying what was done."""
    from .nbgrader.autograde import module_source

    folder = package_folder(root)
    notes = package_folder_notes(root, folder)
    found: dict[str, Path] = {}
    paths = [p for p in root.rglob("*.ipynb") if p.is_file() and not p.is_symlink()]
    for path in sorted(paths, key=lambda p: (len(p.parts), str(p))):
        if any(part.startswith((".", "__")) for part in path.relative_to(root).parts):
            continue  # .ipynb_checkpoints, __MACOSX
        module = notebook_module(path.name)
        if module and module not in found:
            found[module] = path
    for module, path in sorted(found.items()):
        if (folder / f"{module}.py").is_file():
            notes.append(f"{plain(path.name)}: not graded; {module}.py is graded instead")
    todo = {m: p for m, p in found.items() if not (folder / f"{m}.py").is_file()}
    if not todo:
        return folder, notes
    shutil.copytree(folder, target, symlinks=True, ignore=shutil.ignore_patterns("*.ipynb"))
    for module, path in sorted(todo.items()):
        shown = plain(path.name)
        try:
            nb = read_notebook(path)
        except (OSError, ValueError) as e:
            notes.append(f"{shown} could not be read: {e}")
            continue
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        (target / f"{module}.py").write_text(module_source(nb, module))
        if not solutions:
            notes.append(
                f"{shown} holds none of the assignment's solution cells (is it the notebook "
                f"of {module}?): graded on its code cells as {module}.py"
            )
        elif all("raise NotImplementedError" in c.source for c in solutions):
            notes.append(
                f"{shown}: no solution yet (every solution cell still raises "
                f"NotImplementedError); graded as {module}.py"
            )
        else:
            notes.append(f"{shown}: graded as {module}.py, from its solution cells")
    if not (target / "__init__.py").exists():
        (target / "__init__.py").write_text("")
    return target, notes


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


def write_seeds(student_seeds: dict[str, tuple[int, str]], path: Path) -> None:
    """The instructor's record of each student's hidden seed and the attempt it was drawn for
    (seeds.attempt_id: a regrade of the same files draws it again); a regrade keeps other
    rows."""
    rows: dict[str, tuple[str, str]] = {}
    if path.is_file():
        with open(path, newline="") as f:
            rows = {
                r["student"]: (r["seed"], r.get("attempt") or "")
                for r in csv.DictReader(f)
                if "student" in r
            }
    rows.update({name: (str(seed), attempt) for name, (seed, attempt) in student_seeds.items()})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "seed", "attempt"])
        for name in sorted(rows):
            writer.writerow([cell(name), *rows[name]])
    path.chmod(0o600)


def run(submissions: Path, out: Path, **options: Any) -> list[Graded]:
    """Grade every submission of `submissions` into `out` (_run: the options); the folders
    made of loose files (gather_loose) are removed afterwards."""
    loose = Path(tempfile.mkdtemp(prefix="attention-lab-loose-"))  # hidden from every sandbox
    try:
        return _run(Path(submissions), Path(out), loose, **options)
    finally:
        shutil.rmtree(loose, ignore_errors=True)


def _run(
    submissions: Path,
    out: Path,
    loose: Path,
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
    settings: Settings | None = None,
) -> list[Graded]:
    """Grade every submission of `submissions` into `out`. `settings`: the run's, resolved
    once by its entry point: a check's CPU seconds follow from them as in every channel
    (limits.TimeLimits.of)."""
    from ..run.sandbox.jail import SandboxUnavailable
    from ..run.sandbox.zygote import Zygote

    gathered, left = gather_loose(submissions, loose)
    found = find_submissions(submissions, skip=[out], loose=gathered)
    found, superseded = latest_per_student(found)
    for note in left + superseded:
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
    zygote = Zygote(
        warm_up=True, servers=0 if public else jobs, kinds=registry.warm_ups(modules, slow=True)
    )
    try:
        from ..run.limits import TimeLimits  # imports torch
        from ..run.sandbox.runner import Sandbox

        out.mkdir(parents=True, exist_ok=True)
        unpacked = Path(tempfile.mkdtemp(prefix="attention-lab-batch-"))
    except BaseException:
        zygote.close(kill=True)
        raise
    hide = [submissions, out, unpacked, loose]
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
            time_limits=TimeLimits.of(settings or Settings()),  # the one rule of every channel
        )
    except SandboxUnavailable as e:
        shutil.rmtree(unpacked, ignore_errors=True)
        raise BatchError(str(e)) from None
    with sandbox as sb:  # judged on one torch thread (Sandbox.__enter__)
        warning = insecure_note = sb.isolation.warning()
        if warning:
            print(warning, file=sys.stderr)
        # Never the seed: it is the instructor's (seeds.csv, batch.json).
        tier = "public tier (stored fixtures)" if public else "hidden tier (fresh inputs)"
        student_seeds: dict[str, tuple[int, str]] = {}  # name -> (seed, attempt id)
        title_of = lambda name: f"Attention Lab: {name}, {tier}"  # noqa: E731
        grades = sinks.GradesCsv(out / "grades.csv", modules)  # a row as each one is graded

        def one(path: Path, name: str) -> Graded:
            try:
                notes, folder = [], path
                if path.is_symlink():  # a link could name any folder: solutions/, a classmate's
                    raise NotGraded(
                        f"{plain(path.name)} is a symbolic link: links are not followed; put "
                        "the student's folder or .zip itself in SUBMISSIONS"
                    )
                if path.is_file():
                    folder = unpacked / name
                    folder.mkdir()
                    notes = extract_zip(path, folder)
                own = None
                if secret:  # this attempt's own inputs: the files handed in name the attempt
                    attempt = seeds.attempt_id(folder)
                    own = seeds.student_seed(secret, name, attempt)
                    student_seeds[name] = (own, attempt)
                folder, found = with_notebooks(folder, unpacked / f"{name}#notebooks")
                g = sb.grade(folder, name, seed=own)
                g.notes[:0] = notes + found
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
            "submissions_folder": str(submissions.resolve()),  # the class report reads it
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
