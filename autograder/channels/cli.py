"""`python -m autograder <verb>`: what the Makefile's targets call.

    grade         grade a submission folder (the pytest suites, with the plugin)
    stubs         regenerate assignments/ from solutions/
    fixtures      regenerate the public reference outputs from solutions/ (changed modules)
    new-module    scaffold every file of a new exercise module (--name x)
    dist          build the student copy (no solutions) as a .tar.gz
    batch         grade a folder of submissions, sandboxed (batch.py)
    gradescope    build the Gradescope autograder zip; gradescope-run runs inside it
    course, release, collect, autograde, feedback, export
                  the nbgrader cycle (course.py)
    checks        list every check: its id (course.toml's [points] keys), points and title
`python -m autograder --help` lists every verb with its options.

Everything it is given is validated here, with errors that say what was expected.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from ..authoring import scaffold, stubgen, student_copy
from ..core import i18n, paths, syllabus
from ..core.errors import UsageError
from ..core.paths import ASSIGNMENTS, ROOT, SOLUTIONS
from ..core.settings import Settings, SettingsError
from ..trusted import NOT_IN_STUDENT_COPY
from .batch import add_verbs as add_batch_verbs
from .gradescope import add_verbs as add_gradescope_verbs
from .options import add_grading_options, modules_of


def _modules() -> list[str]:
    return list(syllabus.MODULES)


def cmd_grade(args) -> int:
    submission = Path(args.submission)
    if not submission.is_dir():
        raise UsageError(
            f"SUBMISSION={args.submission!r} is not a folder; expected a folder holding the "
            f"exercise modules ({', '.join(m + '.py' for m in _modules())})"
        )
    wanted = modules_of(args.ex)
    modules = _modules()
    present = [m for m in (wanted or modules) if (submission / f"{m}.py").is_file()]
    if not present:
        raise UsageError(
            f"{submission} holds none of the exercise modules "
            f"({', '.join(m + '.py' for m in wanted or modules)})"
        )
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UsageError(
                f"DEVICE={args.device!r}, but this machine has no CUDA device; use DEVICE=cpu"
            )
    elif args.device != "cpu":
        raise UsageError(f"DEVICE={args.device!r}: expected cpu or cuda (or cuda:N)")
    import pytest

    from ..plugin import GradeTable  # torch: only for this verb

    # Load only the plugins grading needs: the installed ones (hypothesis, anyio) that pytest
    # would load by itself cost seconds of imports and grade nothing.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    argv = [
        str(ROOT / "tests" / "graded"),
        "-p",
        "pytest_timeout",
        "-qq",  # with GradeTable's empty status letters: no "FFFF..." and no "83 failed" line
        "-o",
        "console_output_style=classic",
        "--tb=no",
        "-rN",
        "--no-header",
        "-p",
        "no:cacheprovider",  # make grade remembers nothing for pytest --lf
        "--rootdir",
        str(ROOT),
        "--submission",
        str(submission),
        "--device",
        args.device,
        "--results",
        args.results,
    ]
    if wanted:
        argv += ["--ex", ",".join(wanted)]
    if args.include_slow:
        argv += ["--include-slow"]
    settings: Settings = args.settings
    if settings.cpu_limit is not None:  # validated by Settings.resolve
        argv += ["--cpu-limit", str(settings.cpu_limit)]
    if args.verbose:
        argv += ["--show-printed"]
    if args.hints:
        if args.hints != "all":
            raise UsageError(f"HINTS={args.hints!r}: expected HINTS=all (every hint level)")
        argv += ["--all-hints"]
    # The graded suites' conftest.py loads the grading plugin; GradeTable reports: the table,
    # results.json, report.html. A failing check fails its pytest item, but make grade exits
    # 0 whenever grading completed, whatever the score (a score is no error of the command).
    table = GradeTable()
    code = pytest.main(argv, plugins=[table])
    return 0 if table.completed else (int(code) or 3)


def cmd_watch(args) -> int:
    from .watch import cmd_watch as watch  # torch and matplotlib: only for this verb

    return watch(args)


def cmd_hint(args) -> int:
    """make hint EX=m: one level more of the first failing check's hint ladder (ladder.py).

    It reads the ladder state the last `make grade` / `make watch` recorded; when that state
    is not about the module's current file (never graded, or edited since), it grades the
    module first (its fast checks, as make grade does), so the hint is about the code as it is.
    """
    from ..core import registry
    from ..core.i18n import _
    from ..feedback import ladder, sinks
    from ..run import engine, waiting
    from ..run.submission import Submission

    state = args.settings.hint_state  # the ladder's state file (None: build/)
    folder = Path(args.submission)
    try:
        (module,) = syllabus.parse_modules(args.ex)
    except (syllabus.UnknownModule, ValueError):
        raise UsageError(
            f"EX={args.ex!r}: expected one exercise module, e.g. EX=attention"
        ) from None
    if not (folder / f"{module}.py").is_file():
        raise UsageError(f"{folder} has no {module}.py")
    checks = [c for c in registry.checks_of(module) if not c.slow]
    ids = [c.id for c in checks]
    found = ladder.first_failing(folder, ids, state)
    if found is None or found[1].get("source") != ladder.source_hash(folder, module):
        print(_("Grading {module}.py first ...").format(module=module), flush=True)
        submission = Submission(folder)
        results = engine.grade(submission, [module])
        # the student copy: checks that wait on an own dependency get no hint here (waiting.py)
        results = waiting.hold(results, submission, lambda ms: engine.grade(submission, ms))
        # this grading is an attempt at each failing check: the hint ladder (sinks.py)
        graded = sinks.ResultSet(
            str(folder),
            [r for r in results if r.module == module],
            folder=folder,
            left_out=[c for c in registry.checks_of(module) if c.slow],
        )
        sinks.publish(graded, [sinks.HintState(folder, only=ids, state=state)])
        found = ladder.first_failing(folder, ids, state)
        held = waiting.held(results)
        if found is None and held:
            files = waiting.files(held)
            print(f"{held[0].name}\n  {waiting.text(held[0])}")
            text = _(
                "No hint for {module}.py now: its checks that do not pass wait on {files}. "
                "`make hint EX={first}` gives the next hint there."
            ).format(module=module, files=", ".join(files), first=files[0].removesuffix(".py"))
            print(text)
            return 0
        if found is None:
            print(_("Every check of {module}.py passes: no hint needed.").format(module=module))
            return 0
        level = found[1]["level"]  # grading recorded this attempt: show its level
    else:
        level = ladder.climb(folder, found[0], state)
    check_id, recorded = found
    result = ladder.as_result(check_id, module, recorded)
    print(f"{result.name}\n  [{result.misconception}] {i18n.message(result)}")
    for line in i18n.hint_lines(result, (level,)):
        print(f"  {line}")
    if level >= ladder.TOP:
        print(_("  (the last level: `make grade HINTS=all` shows all three)"))
    return 0


def cmd_translations(args) -> int:
    """make translations: .pot templates from the code and the registry, .po files merged."""
    from ..authoring import catalogs

    templates = catalogs.templates()
    for path in catalogs.write_templates(templates):
        print(f"wrote {path.relative_to(ROOT)}")
    for lang in i18n.available():
        for path, texts, untranslated in catalogs.update(lang, templates):
            todo = f", {untranslated} to translate" if untranslated else ""
            print(f"updated {path.relative_to(ROOT)} ({texts} texts{todo})")
    return 0


def cmd_checks(args) -> int:
    """One line per check: id, points, title (the ids course.toml's [points] takes)."""
    from ..core import registry

    for module in modules_of(args.ex) or registry.modules():
        for check in registry.checks_of(module):
            print(f"{check.id}\t{check.points:g}\t{check.name}")
    return 0


def _need_solutions() -> None:
    if not (SOLUTIONS / "__init__.py").is_file():
        raise UsageError(
            "solutions/ is not here: this is the student copy. Stubs and "
            "fixtures are generated on the instructor's side."
        )


def cmd_stubs(args) -> int:
    _need_solutions()
    for path in stubgen.write(SOLUTIONS, ASSIGNMENTS, args.module):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


def cmd_fixtures(args) -> int:
    from ..core import fixtures

    _need_solutions()
    for module in args.module or _modules():
        if fixtures.is_fresh(module) and not args.force:
            print(f"{module}: fresh (solution and probe side unchanged), left as it is")
            continue
        print(f"wrote {fixtures.write(module).relative_to(ROOT)}")
    return 0


def cmd_new_module(args) -> int:
    _need_solutions()
    try:
        written = scaffold.create(args.name)
    except scaffold.ScaffoldError as e:
        raise UsageError(str(e)) from None
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    print(
        f"added {args.name!r} to autograder/core/syllabus.py and README.md's module table.\n"
        f"Next: make stubs fixtures, then make grade SUBMISSION=solutions EX={args.name}; "
        "docs/extending.md says what to write in each file."
    )
    return 0


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


def cmd_dist(args) -> int:
    files = dist_files()  # before anything is written: it refuses unlisted files
    # What the left-out models answer in the copy: recorded on the trusted side by grading
    # every variant on the public tier (model_replays.py; cached in build/model-replays/).
    from ..core import model_replays

    print("recording what the judges' models answer on the public tier (cached once done)...")
    record = set(args.record.split(",")) if args.record is not None else None
    answers = model_replays.compute(_modules(), paths.BUILD / "model-replays", record=record)
    if record is not None and set(answers) != set(_modules()):
        missing = ", ".join(sorted(set(_modules()) - set(answers)))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    grade = verbs.add_parser("grade", help="grade a submission folder")
    add_grading_options(grade)
    grade.add_argument(
        "--verbose",
        action="store_true",
        help="show what your code printed under every check (failing checks always show it)",
    )
    grade.add_argument(
        "--hints", default="", help="all: show every level of each failing check's hint ladder"
    )
    grade.add_argument(
        "--include-slow",
        action="store_true",
        help="also run the slow checks (gpt's training run): `make grade-train`",
    )
    grade.set_defaults(run=cmd_grade)
    stubs = verbs.add_parser("stubs", help="regenerate assignments/")
    stubs.add_argument("--module", action="append", help="only these modules (repeatable)")
    stubs.set_defaults(run=cmd_stubs)
    fx = verbs.add_parser("fixtures", help="regenerate the reference outputs")
    fx.add_argument("--module", action="append")
    fx.add_argument("--force", action="store_true", help="rewrite even fresh modules")
    fx.set_defaults(run=cmd_fixtures)
    add_batch_verbs(verbs)
    add_gradescope_verbs(verbs)
    new = verbs.add_parser("new-module", help="scaffold every file of a new exercise module")
    new.add_argument("--name", required=True)
    new.set_defaults(run=cmd_new_module)
    dist = verbs.add_parser("dist", help="build the student copy")
    dist.add_argument("--out", default="build/attention-lab-student.tar.gz")
    dist.add_argument(
        "--record",
        metavar="MODULES",
        help="record the judges' model answers of these modules only (comma-separated; "
        "default: every module whose cached answers are stale); the others ship theirs if "
        "fresh, else none",
    )
    dist.set_defaults(run=cmd_dist)
    from .class_report import add_verbs as add_report_verbs  # class-report
    from .nbgrader.cli import add_verbs  # course, release, collect, autograde, regrade, ...

    add_report_verbs(verbs)
    add_verbs(verbs)
    from .prairielearn import add_verbs as add_prairielearn_verbs  # prairielearn, ...-run

    add_prairielearn_verbs(verbs)
    watch = verbs.add_parser("watch", help="re-grade a module each time it is saved")
    add_grading_options(watch)
    watch.add_argument(
        "--hard-limit",
        type=float,
        default=120.0,
        help="seconds one grading may take in all, whatever its checks' limits, before it is "
        "stopped",
    )
    watch.set_defaults(run=cmd_watch)
    parser.add_argument(
        "--lang",
        default="",
        help="language of the feedback: en or zh_CN (default: LANGUAGE, LC_ALL, LC_MESSAGES, LANG)",
    )
    parser.add_argument(
        "--warm",
        choices=("0", "1"),
        default=None,
        help="make grade's WARM=: 1 lets a warm grader run the next grading (warm.py; "
        "decided before this parser runs, by python -m autograder)",
    )
    hint = verbs.add_parser("hint", help="the next hint level for the first failing check")
    hint.add_argument("--submission", default="assignments")
    hint.add_argument("--ex", required=True, help="the exercise module")
    hint.set_defaults(run=cmd_hint)
    verbs.add_parser(
        "translations", help="extract the texts into .pot templates; update the .po catalogs"
    ).set_defaults(run=cmd_translations)
    checks = verbs.add_parser("checks", help="list every check: id, points, title")
    checks.add_argument("--ex", default="", help="comma-separated modules (default: all)")
    checks.set_defaults(run=cmd_checks)
    args = parser.parse_args(argv)
    # The run's settings, resolved once (flags, make's variables among them, over the
    # environment: settings.py); each verb reads them from args.settings.
    try:
        args.settings = Settings.resolve(cli_args=args, environ=os.environ)
    except SettingsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.settings.language:
        i18n.use(args.settings.language)
    try:
        return args.run(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
