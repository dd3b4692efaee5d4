"""Checks that wait on another module: local grading with the student's own dependencies.

Each module is graded with trusted stand-ins of the modules it imports, so that a bug costs
points once (submission.py). The student copy (make dist) ships only the stand-ins that wrap
PyTorch built-ins (trusted.NOT_IN_STUDENT_COPY); for the other dependencies local grading runs
the student's own module (Submission.own_dependencies). A bug there would then be charged again
in every module that uses it, with feedback that points into the wrong file.

So, only where an own dependency is used: while that dependency, or one of its own, fails its
own checks or is not written yet, the dependent module's checks that did not pass WAIT
(core.Status.WAITING): counted neither as won nor as lost, shown as waiting on that file.
Passing checks stay passed. Once the dependency passes, the next grading judges them again.
A dependency that this grading did not cover (make grade EX=gpt) is graded too, quietly, to
decide: the student asked about gpt, and the WAIT line names the file and the command that
shows its checks.

Official grading (batch, Gradescope, PrairieLearn, nbgrader) has every stand-in: no module has
an own dependency there, and `hold` returns the results as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from ..core.check import Result, Status
from ..core.i18n import N_, _, ngettext
from ..core.syllabus import MODULES
from .submission import Submission

# Why a dependency holds its dependents, from its own results.
FAILING = "failing"  # a check failed or ran out of time
UNWRITTEN = "unwritten"  # nothing of it is written yet: every check is not attempted
UNFINISHED = "unfinished"  # no check fails, but some of its exercises are not written yet

# The statuses of a dependent's check that wait: one that failed or ran out of time, and one
# "not attempted" because its dependency raised NotImplementedError (probing.attempt names
# that file). The module's own TODOs stay TODO, and a grader error stays an error.
_HELD = (Status.FAILED, Status.TIMED_OUT)

Grade = Callable[[list[str]], list[Result]]


def closure(submission: Submission, module: str) -> list[str]:
    """The modules `module` runs the student's own code of (no stand-in here), transitively:
    its own dependencies, theirs, ... in course order (other files after them, by name)."""
    seen: list[str] = []
    todo = list(submission.own_dependencies(module))
    while todo:
        dep = todo.pop(0)
        if dep != module and dep not in seen:
            seen.append(dep)
            todo += submission.own_dependencies(dep)
    return sorted(seen, key=lambda m: (MODULES.index(m) if m in MODULES else len(MODULES), m))


def state(results: Iterable[Result]) -> str | None:
    """Why a module's results hold its dependents (FAILING, UNWRITTEN, UNFINISHED), or None.
    Checks worth no points (advice) and the grader's own errors say nothing about the code;
    checks that themselves wait are another module's doing (its closure names that one)."""
    own = [r for r in results if r.points > 0 and r.status not in (Status.ERROR, Status.WAITING)]
    if any(r.status in _HELD for r in own):
        return FAILING
    todo = sum(r.status == Status.NOT_ATTEMPTED for r in own)
    if todo:
        return UNWRITTEN if todo == len(own) else UNFINISHED
    return None


def _waits(r: Result, deps: list[str]) -> bool:
    if r.status in _HELD:
        return True
    return r.status == Status.NOT_ATTEMPTED and r.details.get("dependency") in deps


def hold(results: list[Result], submission: Submission, grade: Grade | None = None) -> list[Result]:
    """`results` with each check that waits on an own dependency turned WAITING (in order).

    `grade(modules)` grades the fast checks of dependencies that `results` do not cover
    (their results decide, and are not returned); without it such a dependency holds nothing.
    """
    by_module: dict[str, list[Result]] = {}
    for r in results:
        by_module.setdefault(r.module, []).append(r)
    deps = {m: closure(submission, m) for m in by_module}
    candidates = {m: d for m, d in deps.items() if d and any(_waits(r, d) for r in by_module[m])}
    if not candidates:
        return list(results)
    known = dict(by_module)
    missing = [d for d in MODULES if d not in known and any(d in ds for ds in candidates.values())]
    if missing and grade is not None:
        for r in grade(missing):
            known.setdefault(r.module, []).append(r)
    for m in missing:  # the closure of a quietly graded module is needed to decide it too
        deps.setdefault(m, closure(submission, m))

    done: dict[str, list[Result]] = {}

    def resolved(module: str, visiting: frozenset[str]) -> list[Result]:
        """The module's results with its own waits applied (cycles: as graded)."""
        if module in done:
            return done[module]
        rs = known.get(module, [])
        whys = {}
        for dep in deps.get(module, []):
            if dep in known and dep not in visiting:
                whys[dep] = state(resolved(dep, visiting | {module}))
        blocking = [(f"{dep}.py", why) for dep, why in whys.items() if why]
        out = []
        for r in rs:
            stub = r.details.get("dependency") if r.status == Status.NOT_ATTEMPTED else None
            if stub in whys:  # it ran into that file's NotImplementedError: that one is missing
                out.append(waiting(r, [(f"{stub}.py", whys[stub] or UNFINISHED)]))
            elif blocking and r.status in _HELD:
                out.append(waiting(r, blocking))
            else:
                out.append(r)
        done[module] = out
        return out

    return [r for m in by_module for r in resolved(m, frozenset())]


def waiting(r: Result, blocking: list[tuple[str, str]]) -> Result:
    """`r` as a check that waits on the files `blocking` ([(file, why)]): no points won or
    lost, the result it had kept in extra["waiting"]["was"] (for the record, not shown)."""
    record = {
        "on": [list(pair) for pair in blocking],
        "was": {"status": str(r.status), "misconception": r.misconception, "message": r.message},
    }
    result = dataclasses.replace(
        r,
        status=Status.WAITING,
        score=0.0,
        misconception="",
        hint="",
        details={},
        extra={**r.extra, "waiting": record},
    )
    result.message = text(result, lang="en")
    return result


def on(r: Result) -> list[tuple[str, str]]:
    """[(file, why)] a WAITING result waits on ([] for any other)."""
    record = r.extra.get("waiting") if r.status == Status.WAITING else None
    pairs = record.get("on", []) if isinstance(record, dict) else []
    return [(str(p[0]), str(p[1])) for p in pairs if isinstance(p, (list, tuple)) and len(p) == 2]


def held(results: Iterable[Result]) -> list[Result]:
    """The WAITING results among `results`."""
    return [r for r in results if r.status == Status.WAITING]


def files(results: Iterable[Result]) -> list[str]:
    """The files the WAITING results among `results` wait on, first seen first."""
    return list(dict.fromkeys(f for r in results for f, _why in on(r)))


_WHY = {
    FAILING: N_("waiting on {file}: fix its failing checks first"),
    UNWRITTEN: N_("waiting on {file}: it is not written yet"),
    UNFINISHED: N_("waiting on {file}: some of its exercises are not written yet"),
}
_JOIN = N_("; ")


def text(r: Result, lang: str | None = None) -> str:
    """The one-line feedback of a WAITING result, in the current language (English with
    lang="en": Result.message, for logs)."""
    tr = (lambda s: s) if lang == "en" else _
    parts = [tr(_WHY.get(why, _WHY[FAILING])).format(file=file) for file, why in on(r)]
    return tr(_JOIN).join(parts)


def why(module: str, waited: list[str], shown: Iterable[str]) -> str:
    """Once per module: why its checks wait, and where to look (`shown`: the modules whose
    checks the table shows; a dependency graded quietly is named with its command)."""
    line = ngettext(
        "{module}.py runs your own {files} here (this copy of the kit has no trusted version "
        "of it), so these checks cannot be judged until it passes its own checks: they count "
        "neither for nor against you meanwhile. Grade {module} again once it does.",
        "{module}.py runs your own {files} here (this copy of the kit has no trusted versions "
        "of them), so these checks cannot be judged until they pass their own checks: they "
        "count neither for nor against you meanwhile. Grade {module} again once they do.",
        len(waited),
    ).format(module=module, files=", ".join(waited))
    hidden = [f.removesuffix(".py") for f in waited if f.removesuffix(".py") not in set(shown)]
    if hidden:
        more = ngettext(
            "`make grade EX={modules}` shows its checks.",
            "`make grade EX={modules}` shows their checks.",
            len(hidden),
        )
        line += " " + more.format(modules=",".join(hidden))
    return line


def points(results: Iterable[Result]) -> float:
    """The points of the WAITING results."""
    return sum(r.points for r in results if r.status == Status.WAITING)


def total_note(results: list[Result], fmt: Callable[[float], str]) -> str:
    """'17 points wait on blocks.py, rotary.py' ('' when nothing waits)."""
    waited = points(results)
    if not any(r.status == Status.WAITING for r in results):
        return ""
    names = ", ".join(files(results))
    n = int(waited) if float(waited).is_integer() else 2  # plural for fractions
    return ngettext("{n} point waits on {files}", "{n} points wait on {files}", n).format(
        n=fmt(waited), files=names
    )
