"""Render results: the table `make grade` prints and Gradescope's results.json."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from .core import Result

TAGS = {
    "passed": "PASS",
    "failed": "FAIL",
    "not attempted": "TODO",
    "timed out": "TIME",
    "error": "ERR ",
}


PRINTED_LINES = 6  # lines of the student's own output shown under one check


def _points(x: float) -> str:
    return f"{x:g}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 check', '2 checks'."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def printed_lines(text: str, width: int, keep: int = PRINTED_LINES) -> list[str]:
    """The student's output cut to `keep` lines of at most `width` characters, the cut said."""
    lines = text.rstrip("\n").splitlines()
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:keep]]
    if len(lines) > keep:
        shown.append(f"… ({plural(len(lines) - keep, 'more line')})")
    return shown


def table(
    results: list[Result],
    title: str,
    width: int = 92,
    show_printed: bool = False,
    left_out: list[tuple[str, float]] | None = None,
) -> str:
    """The per-module table. What the student's code printed (Result.extra["printed"]) is
    shown under every failing check, and under every check with show_printed
    (`make grade VERBOSE=1`); `left_out` names the slow checks (name, points) not run."""
    lines = [title, ""]
    modules: dict[str, list[Result]] = {}
    for r in results:
        modules.setdefault(r.module, []).append(r)
    for module, rs in modules.items():
        score, total = sum(r.score for r in rs), sum(r.points for r in rs)
        head = f"{module}.py"
        lines.append(f"{head}{_points(score) + ' / ' + _points(total):>{width - len(head)}}")
        shown: set[tuple[str, str]] = set()
        hinted: set[str] = set()
        last_printed = ""
        for r in rs:
            title = r.name.split(": ", 1)[-1]
            lines.append(f"  {TAGS[r.status]}  {_points(r.score)}/{_points(r.points)}  {title}")
            if not r.passed:
                key = (r.misconception, r.message)
                if key in shown:
                    lines.append(f"{'':14}(same as above: {r.misconception})")
                else:
                    shown.add(key)
                    label = f"[{r.misconception}] " if r.misconception else ""
                    hint = "" if r.misconception in hinted else r.hint
                    hinted.add(r.misconception)
                    for text, prefix in ((label + r.message, ""), (hint, "Hint: ")):
                        if text:
                            lines += textwrap.wrap(
                                prefix + text,
                                width,
                                initial_indent=" " * 14,
                                subsequent_indent=" " * 16,
                            )
            printed = r.extra.get("printed", "")
            if printed and (show_printed or not r.passed):
                if printed == last_printed:
                    lines.append(f"{'':14}Your code printed the same as above.")
                else:
                    lines.append(f"{'':14}Your code printed:")
                    lines += [f"{'':16}| {x}" for x in printed_lines(printed, width - 18)]
                last_printed = printed
        lines.append("")
    score, total = sum(r.score for r in results), sum(r.points for r in results)
    fix = sum(r.status not in ("passed", "not attempted") for r in results)
    todo_checks = sum(r.status == "not attempted" for r in results)
    parts = [f"{plural(fix, 'check')} to fix" if fix else ""]
    parts.append(f"{plural(todo_checks, 'check')} not attempted" if todo_checks else "")
    verdict = (
        ("all graded checks passed" if left_out else "all checks passed")
        if score == total
        else ", ".join(p for p in parts if p)
    )
    lines.append(f"Total: {_points(score)} / {_points(total)} points ({verdict})")
    for name, points in left_out or []:
        text = f"Left out: {name} ({_points(points)} points, a training run): not graded here."
        lines += textwrap.wrap(text, width, subsequent_indent="  ")
        lines.append("  Run `make grade-train` to grade it.")
    todo = [m for m, rs in modules.items() if any(r.status == "not attempted" for r in rs)]
    if len(modules) > 1 and todo:
        lines.append(f"Tip: work one module at a time, in this order: make grade EX={todo[0]}")
    return "\n".join(lines)


def gradescope(results: list[Result]) -> dict:
    """Gradescope's results.json: top-level score, and one entry per check."""
    tests = []
    for r in results:
        output = "Passed." if r.passed else f"[{r.status}] [{r.misconception}] {r.message}"
        if r.hint and not r.passed:
            output += f"\nHint: {r.hint}"
        tests.append(
            {
                "name": r.name,
                "score": r.score,
                "max_score": r.points,
                "status": "passed" if r.passed else "failed",
                "output": output,
                "tags": [r.misconception] if r.misconception else [],
                "visibility": "visible",
            }
        )
    return {
        "score": sum(r.score for r in results),
        "max_score": sum(r.points for r in results),
        "tests": tests,
    }


def write_json(results: list[Result], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(gradescope(results), indent=2, ensure_ascii=False) + "\n")
