"""Render results: the table `make grade` prints and Gradescope's results.json."""

from __future__ import annotations

import json
import os
import textwrap
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from ..core.check import Result, Status
from ..core.i18n import N_, _, hint_lines, message, ngettext, status_word
from ..core.i18n import name as check_name
from ..core.i18n import title as check_title
from ..core.syllabus import MODULES
from ..run import waiting

TAGS = {
    "passed": N_("PASS"),
    "failed": N_("FAIL"),
    "not attempted": N_("TODO"),
    "timed out": N_("TIME"),
    "error": N_("ERR "),
    "waiting": N_("WAIT"),  # waiting.py: not judged while an own dependency fails its checks
    "note": N_("NOTE"),  # a 0-point check that did not pass: advice (core.Result.note)
}


def shown_status(r: Result) -> str:
    """The status a student sees: "note" for advice (core.Result.note), else r.status."""
    return "note" if r.note else str(r.status)


# Which hint levels a failing check shows: {check id: level} (the ladder's state, make grade),
# a tuple of levels for every check (ladder.ALL_LEVELS with HINTS=all; FRESH_LEVELS where no
# state is kept), or None: the most detailed level, labelled "Hint:".
Hints = Mapping[str, int] | tuple[int, ...] | None


def hints_of(r: Result, hints: Hints) -> list[str]:
    """The labelled hint lines `r` shows under `hints` (see Hints)."""
    if hints is None or isinstance(hints, tuple):
        return hint_lines(r, hints)
    return hint_lines(r, (hints.get(r.check_id, 1),))


PRINTED_LINES = 6  # lines of the student's own output shown under one check


def _points(x: float) -> str:
    return f"{x:g}"


def width_of(text: str) -> int:
    """Columns `text` takes in a terminal: a CJK character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _is_wide(token: str) -> bool:
    return unicodedata.east_asian_width(token[-1]) in "WF"


# Line breaking in Chinese (kinsoku): a line never starts with closing punctuation and never
# ends with opening punctuation; such a character takes the character before (or after) it
# onto the next line with it.
NO_LINE_START = frozenset("，。、：；！？）》」』】〉〕”’…％")
NO_LINE_END = frozenset("（《「『【〈〔“‘")


def wrap(text: str, width: int, initial: str = "", subsequent: str = "") -> list[str]:
    """textwrap.wrap by terminal columns: English as textwrap wraps it; text with CJK
    characters (which have no spaces between words) may break between any two of them, but
    never before closing punctuation (，。：；）、 ...) or after opening punctuation (（《 ...)."""
    if width_of(text) == len(text):
        return textwrap.wrap(text, width, initial_indent=initial, subsequent_indent=subsequent)
    tokens: list[str] = []  # words, spaces, and single wide characters
    for c in text:
        wide = unicodedata.east_asian_width(c) in "WF"
        if wide or c == " " or not tokens or tokens[-1] == " " or _is_wide(tokens[-1]):
            tokens.append(c)
        else:
            tokens[-1] += c
    lines: list[str] = []
    line: list[str] = [initial]
    for token in tokens:
        if width_of("".join(line) + token) > width and "".join(line[1:]).strip():
            carry: list[str] = []
            if token[0] in NO_LINE_START:  # take the character before along
                while len(line) > 2:
                    carry.insert(0, line.pop())
                    if carry[0] != " " and carry[0][0] not in NO_LINE_START:
                        break
            while len(line) > 2 and line[-1][-1] in NO_LINE_END:
                carry.insert(0, line.pop())
            lines.append("".join(line).rstrip())
            while carry and carry[0] == " ":
                carry.pop(0)
            line = [subsequent, *carry]
            if token == " " and len(line) == 1:
                continue
        line.append(token)
    if "".join(line).strip():
        lines.append("".join(line).rstrip())
    return lines


def printed_lines(text: str, width: int, keep: int = PRINTED_LINES) -> list[str]:
    """The student's output cut to `keep` lines of at most `width` characters, the cut said."""
    lines = text.rstrip("\n").splitlines()
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:keep]]
    if len(lines) > keep:
        more = len(lines) - keep
        shown.append("… (" + ngettext("{n} more line", "{n} more lines", more).format(n=more) + ")")
    return shown


def summary(results: list[Result], left_out: bool = False) -> str:
    """'all checks passed', '1 check to fix, 2 checks not attempted', ..."""
    score, total = sum(r.score for r in results), sum(r.points for r in results)
    notes = sum(r.note for r in results)
    if score == total:
        done = _("all graded checks passed") if left_out else _("all checks passed")
        if not notes:
            return done
        advice = ngettext("{n} advice note", "{n} advice notes", notes).format(n=notes)
        return _(", ").join((done, advice))
    fix = sum(
        r.status not in ("passed", "not attempted", "waiting") and not r.note for r in results
    )
    todo = sum(r.status == "not attempted" for r in results)
    parts = [ngettext("{n} check to fix", "{n} checks to fix", fix).format(n=fix) if fix else ""]
    parts.append(
        ngettext("{n} check not attempted", "{n} checks not attempted", todo).format(n=todo)
        if todo
        else ""
    )
    # "1 check to fix; 7 points wait on blocks.py, rotary.py" (waiting.py)
    listed = (_(", ").join(p for p in parts if p), waiting.total_note(results, _points))
    return _("; ").join(t for t in listed if t)


def table(
    results: list[Result],
    title: str,
    width: int = 92,
    show_printed: bool = False,
    left_out: list[tuple[str, float]] | None = None,
    hints: Hints = None,
) -> str:
    """The per-module table, in the current language (i18n). What the student's code printed
    (Result.extra["printed"]) is shown under every failing check, and under every check with
    show_printed (`make grade VERBOSE=1`); `left_out` names the slow checks (name, points) not
    run; `hints` chooses the hint levels shown (see Hints)."""
    lines = [title, ""]
    modules: dict[str, list[Result]] = {}
    for r in results:
        modules.setdefault(r.module, []).append(r)
    for module, rs in modules.items():
        score, total = sum(r.score for r in rs), sum(r.points for r in rs)
        head = f"{module}.py"
        points = _points(score) + " / " + _points(total)
        if waiting.points(rs):  # "(8 waiting)  13 / 21", right-aligned by terminal columns
            points = _("({n} waiting)").format(n=_points(waiting.points(rs))) + "  " + points
        lines.append(head + " " * max(1, width - width_of(head) - width_of(points)) + points)
        shown: set[tuple[str, str]] = set()
        hinted: set[str] = set()
        last_printed = ""
        held = waiting.held(rs)
        said = ""
        for r in rs:
            title = check_title(r.name)
            tag = _(TAGS[shown_status(r)])
            lines.append(f"  {tag}  {_points(r.score)}/{_points(r.points)}  {title}")
            said = said if r.status == Status.WAITING else ""
            if r.status == Status.WAITING:  # the reason (once in a row), then what it means
                texts = [waiting.text(r)] if waiting.text(r) != said else []
                said = waiting.text(r)
                if r is held[-1]:
                    texts.append(waiting.why(module, waiting.files(held), modules))
                for text in texts:
                    lines += wrap(text, width, " " * 14, " " * 16)
            elif not r.passed:
                key = (r.misconception, r.message)
                if key in shown:
                    same = _("(same as above: {misconception})")
                    lines.append(" " * 14 + same.format(misconception=r.misconception))
                else:
                    shown.add(key)
                    label = f"[{r.misconception}] " if r.misconception else ""
                    texts = [label + message(r)]
                    if r.misconception not in hinted:
                        texts += hints_of(r, hints)
                    hinted.add(r.misconception)
                    for text in texts:
                        if text:
                            lines += wrap(text, width, " " * 14, " " * 16)
            printed = r.extra.get("printed", "")
            if printed and (show_printed or not (r.passed or r.status == Status.WAITING)):
                if printed == last_printed:
                    lines.append(" " * 14 + _("Your code printed the same as above."))
                else:
                    lines.append(" " * 14 + _("Your code printed:"))
                    lines += [f"{'':16}| {x}" for x in printed_lines(printed, width - 18)]
                last_printed = printed
        lines.append("")
    score, total = sum(r.score for r in results), sum(r.points for r in results)
    verdict = summary(results, bool(left_out))
    lines.append(
        _("Total: {score} / {total} points ({summary})").format(
            score=_points(score), total=_points(total), summary=verdict
        )
    )
    for name, worth in left_out or []:
        text = _("Left out: {name} ({points} points, a training run): not graded here.").format(
            name=check_name(name), points=_points(worth)
        )
        lines += wrap(text, width, "", "  ")
        lines.append("  " + _("Run `make grade-train` to grade it."))
    lines += tip(results)
    return "\n".join(lines)


def tip(results: list[Result]) -> list[str]:
    """The line under the table (and on report.html) that says where to go next, when more
    than one module was graded, in course order: the first module with a check to fix; when
    every module begun passes, the first one with a check not attempted."""
    modules: dict[str, list[Result]] = {}
    for r in results:
        modules.setdefault(r.module, []).append(r)
    if len(modules) < 2:
        return []
    order = sorted(modules, key=lambda m: MODULES.index(m) if m in MODULES else len(MODULES))
    failing = [m for m in order if any(_to_fix(r) for r in modules[m])]
    if failing:
        tip = _("Tip: fix {module}.py first, one module at a time: make grade EX={module}")
        return [tip.format(module=failing[0])]
    todo = [m for m in order if any(r.status == "not attempted" for r in modules[m])]
    if todo:
        tip = _("Tip: work one module at a time, in this order: make grade EX={module}")
        return [tip.format(module=todo[0])]
    return []


def _to_fix(r: Result) -> bool:
    """A check that lost points through the student's code (not a TODO, a NOTE, or the
    grader's own error)."""
    return r.status in ("failed", "timed out") and not r.note


def gradescope(results: list[Result], hints: Hints = None) -> dict:
    """Gradescope's results.json: top-level score, and one entry per check (the feedback in
    the current language; `hints` as in `table`)."""
    tests = []
    for r in results:
        if r.passed:
            output = _("Passed.")
        elif r.status == Status.WAITING:
            # Counted neither as won nor as lost: worth 0 here, its points kept in extra_data
            # (results.json's top-level max_score still counts them, like the table's total).
            tests.append(_waiting_test(r, results))
            continue
        else:
            output = f"[{status_word(shown_status(r))}] [{r.misconception}] {message(r)}"
            output += "".join("\n" + line for line in hints_of(r, hints))
        tests.append(
            {
                "name": r.name,
                "score": r.score,
                "max_score": r.points,
                # a NOTE costs nothing (0 of 0 points): Gradescope shows it as passed
                "status": "passed" if r.passed or r.note else "failed",
                "output": output,
                "tags": [r.misconception] if r.misconception else [],
                "visibility": "visible",
            }
        )
    data = {
        "score": sum(r.score for r in results),
        "max_score": sum(r.points for r in results),
        "tests": tests,
    }
    return {**data, **waiting_summary(results)}


def waiting_summary(results: list[Result]) -> dict:
    """results.json's top-level `output` and `extra_data` on the checks that wait (waiting.py),
    or {} when none does."""
    note = waiting.total_note(results, _points)
    if not note:
        return {}
    return {
        "output": _("{note}: not judged yet, counted neither as won nor as lost.").format(
            note=note
        ),
        "extra_data": {
            "waiting_points": waiting.points(results),
            "waiting_on": waiting.files(results),
        },
    }


def _waiting_test(r: Result, results: list[Result]) -> dict:
    """The results.json entry of a WAITING check: max_score 0 (it is not judged, so neither
    won nor lost), the points it will be worth in extra_data, the reason in its output."""
    held = [x for x in results if x.module == r.module and x.status == Status.WAITING]
    shown = {x.module for x in results}
    output = f"[{status_word(r.status)}] {waiting.text(r)}\n"
    output += waiting.why(r.module, waiting.files(held), shown)
    return {
        "name": r.name,
        "score": 0.0,
        "max_score": 0.0,
        "status": "failed",
        "output": output,
        "tags": ["waiting"],
        "visibility": "visible",
        "extra_data": {"status": "waiting", "points": r.points, "waiting_on": waiting.files([r])},
    }


def write_json(results: list[Result], path: Path, hints: Hints = None) -> None:
    """`results` alone in Gradescope's format at `path` (written to a temporary file, then
    renamed). make grade and make watch merge instead (publish.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(gradescope(results, hints), indent=2, ensure_ascii=False)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
