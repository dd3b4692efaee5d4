"""`python -m autograder hint` (make hint EX=m): one level more of the first failing check's
hint ladder (feedback/ladder.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...core import i18n, syllabus
from ...core.errors import UsageError


def register(verbs) -> None:
    hint = verbs.add_parser("hint", help="the next hint level for the first failing check")
    hint.add_argument("--submission", default="assignments")
    hint.add_argument("--ex", required=True, help="the exercise module")
    hint.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """make hint EX=m: one level more of the first failing check's hint ladder (ladder.py).

    It reads the ladder state the last `make grade` / `make watch` recorded; when that state
    is not about the module's current file (never graded, or edited since), it grades the
    module first (its fast checks, as make grade does), so the hint is about the code as it is.
    """
    from ...core import registry
    from ...core.i18n import _
    from ...feedback import ladder, sinks
    from ...run import engine, waiting
    from ...run.submission import Submission

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
        results = engine.grade(submission, [module], settings=args.settings)
        # the student copy: checks that wait on an own dependency get no hint here (waiting.py)
        results = waiting.hold(
            results, submission, lambda ms: engine.grade(submission, ms, settings=args.settings)
        )
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
            print(f"{i18n.name(held[0].name)}\n  {waiting.text(held[0])}")
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
    print(f"{i18n.name(result.name)}\n  [{result.misconception}] {i18n.message(result)}")
    for line in i18n.hint_lines(result, (level,)):
        print(f"  {line}")
    if level >= ladder.TOP:
        print(_("  (the last level: `make grade HINTS=all` shows all three)"))
    return 0
