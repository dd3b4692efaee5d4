"""What of the kit a sandboxed process may see while it grades one exercise module m.

An allow-list, per module: the probe side of the kit (the modules the sandboxed process runs
from: core, probing, submission, the sandbox's own child side, and everything they import),
m's probe files and what they import, and the trusted stand-ins of the modules m depends on.
Never m's own stand-in, no judge*.py, no solutions/, no fixtures (public ones included).
(A group of modules, a tuple, would see the union of its modules' views; the runner grades
each module in a process of its own, so its groups are one module each.)

`stage(folder, groups)` copies those files, once per run, into folder/<group>/autograder/; the
jail binds that tree read-only where the kit's autograder/ package is (namespace modes), or
the sandboxed process imports from it (uid mode, where the real package is root-only). The
zygote imports only the base part (BASE and its imports), so no fork of it holds more.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import py_compile
import shutil
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from ...core import paths, registry

PACKAGE = paths.PACKAGE
# The kit modules the sandboxed process runs from (relative to autograder/); their imports
# join them. Every module the zygote imports must be in this set's closure.
BASE = (
    "__init__.py",
    "run/channel.py",
    "core/check.py",
    "run/probing.py",
    "run/submission.py",
    "run/limits.py",
    "core/dispatch.py",
    "run/sandbox/__init__.py",
    "run/sandbox/child.py",
    "run/sandbox/jail.py",
    "run/sandbox/wire.py",
    "run/sandbox/zygote.py",
)
NEVER = ("judge", "fixtures", "solutions")  # parts of a path no view may hold


class ViewError(Exception):
    """The kit itself would put something forbidden in a view (a kit bug, not a student's)."""


def _module_file(name: str) -> Path | None:
    """autograder.x.y -> its file under the package (module or package __init__)."""
    parts = name.split(".")
    if parts[0] != "autograder":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dotted(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = ["autograder", *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> frozenset[Path]:
    """The kit files `path` imports (any depth, lazy imports included), with the packages
    on the way (their __init__.py). Parsed once per version of the file."""
    st = path.stat()
    return _parsed_imports(path, st.st_mtime_ns, st.st_size)


@cache
def _parsed_imports(path: Path, _mtime_ns: int, _size: int) -> frozenset[Path]:
    here = _dotted(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                file = _module_file(".".join(parts[:i]))
                if file:
                    found.add(file)
    return frozenset(found)


def _closure(start: Iterable[Path]) -> set[Path]:
    """`start`, what it imports (transitively), and the packages on the way."""
    todo = list(start)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += _imports(path) - seen
        todo += [d / "__init__.py" for d in path.parents if d.is_relative_to(PACKAGE)]
    return seen


def depends_on(module: str) -> list[str]:
    """The exercise modules `module` builds on: what solutions/<module>.py imports
    relatively, and, through their stand-ins, what those import (transitively)."""
    found: set[str] = set()
    todo = _relative_imports(paths.SOLUTIONS / f"{module}.py")
    while todo:
        other = todo.pop()
        if other in found or other == module:
            continue
        found.add(other)
        todo |= _relative_imports(paths.TRUSTED / f"{other}.py")
    return [m for m in registry.modules() if m in found]


def _relative_imports(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return set()
    return {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module in registry.modules()
    }


def base_files() -> frozenset[Path]:
    return frozenset(_closure({PACKAGE / p for p in BASE}))


@cache
def allowed(modules: str | tuple[str, ...]) -> tuple[Path, ...]:
    """Every file of autograder/ the sandboxed process grading `modules` (one module or a
    tuple of them) may see."""
    group = (modules,) if isinstance(modules, str) else tuple(modules)
    probes, stand_ins = set(), set()
    for module in group:
        probes |= {_module_file(f"autograder.checks.{module}")}
        probes |= set(registry.probe_files_of(module))
        for check in registry.checks_of(module):
            for ref in (check.spec()["inputs"], check.spec()["probe"]):
                probes.add(_module_file(ref.split(":")[0]))
        stand_ins |= {paths.TRUSTED / f"{m}.py" for m in depends_on(module)}
    files = _closure(base_files() | {p for p in probes if p} | stand_ins)
    own = {paths.TRUSTED / f"{module}.py" for module in group}
    for path in files:
        rel = path.relative_to(PACKAGE)
        if path in own or any(word in part for part in rel.parts for word in NEVER):
            raise ViewError(
                f"the view for {'+'.join(group)} would hold autograder/{rel.as_posix()} "
                "(imported by the probe side, or a stand-in of a module graded in it): keep "
                "judge-side code, fixtures and the graded modules' stand-ins out of probe*.py"
            )
    return tuple(sorted(files))


def stage(folder: Path, groups: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Copy each group's allowed files into folder/<its first module>/autograder/ (read-only
    for everyone, traversable), each with its bytecode (compiled once here, not in every
    sandboxed process): {group: that autograder/ folder}."""
    staged = {}
    compiled: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for group in groups:
            target = folder / group[0] / "autograder"
            for path in allowed(group):
                dest = target / path.relative_to(PACKAGE)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)  # the mtime the bytecode was compiled against
                dest.chmod(0o444)
                if path not in compiled:
                    cfile = os.path.join(scratch, f"{len(compiled)}.pyc")
                    py_compile.compile(str(path), cfile=cfile, doraise=True)
                    compiled[path] = Path(cfile).read_bytes()
                pyc = Path(importlib.util.cache_from_source(str(dest)))
                pyc.parent.mkdir(exist_ok=True)
                pyc.write_bytes(compiled[path])
                pyc.chmod(0o444)
            for dirpath, _dirs, _files in os.walk(folder / group[0]):
                os.chmod(dirpath, 0o555)
            staged[group] = str(target)
    return staged


def unstage(folder: Path) -> None:
    """Remove a staged tree (its folders are read-only)."""
    for dirpath, _dirs, _files in os.walk(folder):
        try:
            os.chmod(dirpath, 0o755)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)
