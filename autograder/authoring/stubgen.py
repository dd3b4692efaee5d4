"""Generate the student stubs (assignments/) from the single source (solutions/).

Every region between `### BEGIN SOLUTION` and `### END SOLUTION` (nbgrader's own markers)
becomes one line, `raise NotImplementedError("<exercise>: not attempted yet ...")`, where
<exercise> is the function or method the region sits in. Everything else, the TODO text
included, is kept as it is.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HEADER = (
    "# Generated from solutions/{name} by `make stubs`. Fill in the TODO regions, then run\n"
    "# `make grade` (or `make grade EX={module}`).\n"
)
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")


def _track(enclosing: list[tuple[int, str]], line: str) -> None:
    """Keep `enclosing` the stack of (indent, name) of the defs and classes around `line`."""
    match = _DEF.match(line)
    if match:
        depth = len(line) - len(line.lstrip())
        while enclosing and enclosing[-1][0] >= depth:
            enclosing.pop()
        enclosing.append((depth, match.group(1)))


def stub_source(text: str, name: str = "module.py") -> str:
    """The stub of one solution file's text."""
    out: list[str] = []
    enclosing: list[tuple[int, str]] = []
    inside: int | None = None
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
        _track(enclosing, line)
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


# --------------------------------------------------------------------------- hint leaks
#
# A stub's TODO text (its comments and docstrings) must state the goal, the equation, the
# shapes, the functions allowed and a size budget, never the answer. The rule the kit tests:
# no *non-trivial* line of a solution region may appear, whitespace ignored, anywhere in the
# comments or docstrings of the stub generated from it. A line is trivial when it holds
# nothing but names, keywords and the punctuation `, : ( ) =` with no call: `else:`,
# `m = m_new`, `return out, weights`, `for block in blocks:`. Such a line says only what
# the docstring already promises (what is returned, what is looped over); any line with an
# operator, a call, an attribute, an index or a literal is a computation, and a hint that
# spells it out is the answer.

_TRIVIAL_OPS = {",", ":", "(", ")", "="}


def _code_of(line: str) -> str:
    """A source line without its comment, all whitespace removed ("" if none)."""

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"\s+", "", line.split("#", 1)[0])
    kept = [t.string for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL)]
    return re.sub(r"\s+", "", "".join(kept))


def is_trivial(line: str) -> bool:
    """True when a solution line holds only names, keywords and `, : ( ) =`, and no call
    (a line that only closes brackets, such as `)` or `]`, is trivial too)."""

    if not _code_of(line).strip(")]},"):
        return True
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False
    previous = None
    for t in tokens:
        if t.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            continue
        if t.type == tokenize.NAME:
            previous = t
            continue
        if t.type != tokenize.OP or t.string not in _TRIVIAL_OPS:
            return False
        if t.string == "(" and previous is not None and not keyword.iskeyword(previous.string):
            return False  # a call
        previous = None
    return True


def _shown_text(stub: str) -> str:
    """Every comment and string of a stub, whitespace removed: what a student reads."""

    parts = []
    for t in tokenize.generate_tokens(io.StringIO(stub).readline):
        if t.type == tokenize.COMMENT:
            parts.append(t.string.lstrip("#"))
        elif t.type == tokenize.STRING:
            parts.append(t.string)
    return re.sub(r"\s+", "", "\n".join(parts))


def hint_leaks(text: str, name: str = "module.py") -> list[dict]:
    """For each solution region of one solutions/ file: its exercise, the number of TODO
    comment lines above it, its code lines, and the non-trivial code lines that the stub's
    comments or docstrings give away (the rule above)."""
    shown = _shown_text(stub_source(text, name))
    lines = text.splitlines()
    found: list[dict] = []
    enclosing: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        _track(enclosing, line)
        if stripped != BEGIN:
            i += 1
            continue
        todo, j = 0, i - 1
        while j >= 0 and lines[j].strip().startswith("#"):
            todo, j = todo + 1, j - 1
        code, k = [], i + 1
        while lines[k].strip() != END:
            if _code_of(lines[k]):
                code.append(lines[k].strip())
            k += 1
        counted = [c for c in code if not is_trivial(c)]
        leaked = [c for c in counted if _code_of(c) in shown]
        exercise = enclosing[-1][1] if enclosing else Path(name).stem
        found.append(
            {
                "exercise": exercise,
                "todo_lines": todo,
                "code_lines": len(code),
                "counted": len(counted),
                "leaked": leaked,
            }
        )
        i = k + 1
    return found
