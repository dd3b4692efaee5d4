"""Generate the student stubs (assignments/) from the single source (solutions/).

Every region between `### BEGIN SOLUTION` and `### END SOLUTION` (nbgrader's own markers)
becomes one line, `raise NotImplementedError("<exercise>: not attempted yet ...")`, where
<exercise> is the function or method the region sits in. Everything else, the TODO text
included, is kept as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HEADER = (
    "# Generated from solutions/{name} by `make stubs`. Fill in the TODO regions, then run\n"
    "# `make grade` (or `make grade EX={module}`).\n"
)
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")


def stub_source(text: str, name: str = "module.py") -> str:
    """The stub of one solution file's text."""
    out, enclosing, inside = [], [], None
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if inside is not None:
            if stripped == END:
                inside = None
            elif stripped == BEGIN:
                raise ValueError(f"{name}:{number}: nested {BEGIN}")
            continue
        if stripped == END:
            raise ValueError(f"{name}:{number}: {END} without {BEGIN}")
        if stripped == BEGIN:
            indent = line[: len(line) - len(line.lstrip())]
            while enclosing and enclosing[-1][0] >= len(indent):
                enclosing.pop()
            exercise = enclosing[-1][1] if enclosing else Path(name).stem
            out.append(f'{indent}raise NotImplementedError("{exercise}: not attempted yet")\n')
            inside = number
            continue
        match = _DEF.match(line)
        if match:
            depth = len(line) - len(line.lstrip())
            while enclosing and enclosing[-1][0] >= depth:
                enclosing.pop()
            enclosing.append((depth, match.group(1)))
        out.append(line)
    if inside is not None:
        raise ValueError(f"{name}:{inside}: {BEGIN} is never closed")
    body = "".join(out)
    if BEGIN in text:
        body = HEADER.format(name=name, module=Path(name).stem) + body
    return body


def generate(solutions: Path) -> dict[str, str]:
    """{file name: stub text} for every .py file in solutions/."""
    return {p.name: stub_source(p.read_text(), p.name) for p in sorted(solutions.glob("*.py"))}


def write(solutions: Path, assignments: Path, modules: list[str] | None = None) -> list[Path]:
    """Write the stubs (only `modules`' when given; otherwise all, removing stale files)."""
    assignments.mkdir(exist_ok=True)
    stubs = generate(solutions)
    if modules:
        stubs = {name: text for name, text in stubs.items() if Path(name).stem in modules}
    else:
        for stale in assignments.glob("*.py"):
            if stale.name not in stubs:
                stale.unlink()
    written = []
    for name, text in stubs.items():
        path = assignments / name
        path.write_text(text)
        written.append(path)
    return written
