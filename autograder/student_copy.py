"""What `make dist` changes in the files it copies into the student copy.

The judges' models (functions marked `@model` in autograder/verdicts.py: what an exercise
computes, correctly or with a named mistake) are working implementations of the exercises.
The student copy keeps their signatures, decorated `@model.left_out`, with the bodies (and
docstrings) left out: there, a candidate mistake that needs a model is not named, and a
verdict that needs one says the mistake is not named in this copy (core.UNNAMED). The
instructor's copy, and every official grading, has them all.
"""

from __future__ import annotations

import ast
import re

# The files whose @model functions lose their bodies (relative to the kit's root).
JUDGES = re.compile(r"^autograder/checks/[a-z_]+/judge[a-z_]*\.py$")
LEFT_OUT = "...  # left out of the student copy (a model of the computation)"


def _is_model(decorator: ast.expr) -> bool:
    return (isinstance(decorator, ast.Name) and decorator.id == "model") or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "model"
    )


def strip_models(source: str) -> str:
    """`source` with the body of every top-level function decorated @model replaced by
    `...` and its decorator by @model.left_out. Raises ValueError if a model's body shares
    a line with its signature (it could not be cut out by lines)."""
    lines = source.splitlines(keepends=True)
    cuts: list[tuple[int, int, int, str]] = []  # (decorator line, first, last body line, indent)
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        marks = [d for d in node.decorator_list if _is_model(d)]
        if not marks:
            continue
        first = node.body[0].lineno
        if first == node.lineno or any(lines[d.lineno - 1].strip() != "@model" for d in marks):
            raise ValueError(f"line {node.lineno}: @model {node.name} cannot be cut out by lines")
        indent = re.match(r"\s*", lines[first - 1]).group(0)
        cuts.append((marks[0].lineno, first, node.end_lineno, indent))
    for decorator, first, last, indent in reversed(cuts):
        lines[first - 1 : last] = [f"{indent}{LEFT_OUT}\n"]
        lines[decorator - 1] = lines[decorator - 1].replace("@model", "@model.left_out")
    return "".join(lines)


def copied(relative: str, data: bytes) -> bytes:
    """The bytes of kit file `relative` as the student copy holds it."""
    if JUDGES.match(relative):
        return strip_models(data.decode()).encode()
    return data
