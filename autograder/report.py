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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _points(x: float) -> str:
    return f"{x:g}"


def table(results: list[Result], title: str, width: int = 92) -> str:
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
        for r in rs:
            title = r.name.split(": ", 1)[-1]
            lines.append(f"  {TAGS[r.status]}  {_points(r.score)}/{_points(r.points)}  {title}")
            if r.passed:
                continue
            key = (r.misconception, r.message)
            if key in shown:
                lines.append(f"{'':14}(same as above: {r.misconception})")
                continue
            shown.add(key)
            label = f"[{r.misconception}] " if r.misconception else ""
            hint = "" if r.misconception in hinted else r.hint
            hinted.add(r.misconception)
            for text, prefix in ((label + r.message, ""), (hint, "Hint: ")):
                if text:
                    lines += textwrap.wrap(
                        prefix + text, width, initial_indent=" " * 14, subsequent_indent=" " * 16
                    )
        lines.append("")
    score, total = sum(r.score for r in results), sum(r.points for r in results)
    verdict = (
        "all checks passed"
        if score == total
        else _count(sum(not r.passed for r in results), "check") + " to fix"
    )
    lines.append(f"Total: {_points(score)} / {_points(total)} points ({verdict})")
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
