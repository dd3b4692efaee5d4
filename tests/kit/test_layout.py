"""The package's folders show the architecture (issue 25): few files directly in autograder/,
a package docstring that names every module, and imports that go one way between layers.

The direction: a layer imports only layers at or below its rank (RANK). core is what every
layer shares; run runs checks; feedback renders results; authoring writes the kit's files;
channels (and the entry points directly in autograder/) ask for grading. An import against
the direction is listed in AGAINST with its reason, so each one is a decision, not an
accident; without those, no two layers import each other.
"""

from __future__ import annotations

import ast
import re
import warnings

import pytest
from conftest import ROOT

pytestmark = pytest.mark.fast

PACKAGE = ROOT / "autograder"
APPLIED = (PACKAGE / "run").is_dir()
needs_layout = pytest.mark.skipif(not APPLIED, reason="run tools/relayout.py --apply first")

MOST_FILES_AT_TOP = 15

# Lower imports nothing higher. trusted/ uses core; checks/ core and run.probing.
RANK = {
    "core": 0,
    "trusted": 0,
    "checks": 2,  # probes use run.probing (inputs), judges core.verdicts
    "run": 2,
    "feedback": 3,
    "authoring": 4,
    "channels": 5,
    "notebook": 5,  # autograder/notebook.py: nbgrader's test cells (a channel)
    "plugin": 5,  # autograder/plugin.py: pytest's -p autograder.plugin (a channel)
    "__main__": 6,
}

# Imports against the direction: (importing module, imported module) -> why. Each closes a
# cycle between layers (core -> run -> core; run -> channels -> run): the only ones there are.
AGAINST = {
    ("autograder.core.references", "autograder.run.limits"): (
        "the reference's CPU times calibrate the time limits (issue 25, item 5: one settings "
        "object passed down)"
    ),
    ("autograder.core.fixtures", "autograder.run.probing"): (
        "make fixtures runs the probes on solutions/ (generating them belongs in authoring/; "
        "reading them stays in core)"
    ),
    ("autograder.core.fixtures", "autograder.run.submission"): (
        "make fixtures loads solutions/ as a submission (as above)"
    ),
    ("autograder.run.warm", "autograder.channels.cli"): (
        "the warm server's forks run the command line's verbs (lazy: the client imports none)"
    ),
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_of(path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _edges() -> dict[tuple[str, str], int]:
    """(module, module it imports) -> line, for every import of the package's own modules
    (inside functions too: a lazy import is still a dependency)."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "fixtures" in path.relative_to(PACKAGE).parts[:1]:
            continue
        me = _module_of(path)
        package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    as_file = ROOT / (sub.replace(".", "/") + ".py")
                    as_package = ROOT / sub.replace(".", "/") / "__init__.py"
                    targets.append(sub if as_file.exists() or as_package.exists() else target)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t.startswith("autograder.") and _layer(t) != _layer(me):
                    found.setdefault((me, t), node.lineno)
    return found


@needs_layout
def test_few_files_directly_in_the_package():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MOST_FILES_AT_TOP, f"{len(top)} files directly in autograder/: {top}"


# Issue 25.5: a module's judge logic stays readable; its misconception prose lives beside it as
# data (misconceptions.toml, wrong_values.toml), and what outgrows this goes to a second file
# (kvcache's judge_models.py).
MOST_JUDGE_LINES = 600


def test_judge_files_stay_short():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in sorted((PACKAGE / "checks").glob("*/*.py"))
        if (n := len(p.read_text().splitlines())) > MOST_JUDGE_LINES
    }
    assert not long, f"files of autograder/checks/ over {MOST_JUDGE_LINES} lines: {long}"


def _docstring_sections() -> dict[str, set[str]]:
    """{'' or 'core/' ...: the module files the package docstring lists under it}."""
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or ""
    sections: dict[str, set[str]] = {"": set()}
    current = ""
    for line in doc.splitlines():
        head = re.match(r"^ {4}([a-z_0-9]+(?:/[a-z_0-9]+)*/)\s", line)
        entry = re.match(r"^ {8}([a-z_0-9]+\.py)\s", line)
        if head:
            current = head.group(1)
            sections.setdefault(current, set())
        elif entry:
            sections.setdefault(current, set()).add(entry.group(1))
    return sections


@needs_layout
def test_the_package_docstring_names_every_module():
    sections = _docstring_sections()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("checks", "trusted", "fixtures", "__pycache__"):
            continue  # per exercise module: named by their folder's pattern
        if path.name == "__init__.py":
            folder = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
            if folder and folder not in sections:
                missing.append(folder)
            continue
        folder = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        if path.name not in sections.get(folder, set()):
            missing.append(rel.as_posix())
    for pattern in ("checks/", "trusted/", "fixtures/", "locale/"):
        if pattern not in sections:
            missing.append(pattern)
    assert not missing, (
        f"autograder/__init__.py's docstring does not name {missing}: "
        "python tools/relayout.py --docstring prints it as it should read"
    )


@needs_layout
def test_layers_import_one_way():
    against = {}
    for (me, target), line in _edges().items():
        mine, theirs = RANK.get(_layer(me)), RANK.get(_layer(target))
        assert mine is not None, f"{me}: a layer test_layout.RANK does not know"
        assert theirs is not None, f"{target}: a layer test_layout.RANK does not know"
        if theirs > mine:
            against[(me, target)] = line
    new = {k: v for k, v in against.items() if k not in AGAINST}
    assert not new, (
        "imports against the direction of the layers (fix them, or list them in AGAINST with "
        f"the reason): {[f'{a} -> {b} (line {n})' for (a, b), n in sorted(new.items())]}"
    )
    gone = sorted(set(AGAINST) - set(against))
    if gone:
        warnings.warn(f"AGAINST lists imports that are gone (remove them): {gone}", stacklevel=1)


@needs_layout
def test_no_cycle_between_layers_but_through_against():
    graph: dict[str, set[str]] = {}
    for me, target in _edges():
        if (me, target) not in AGAINST:
            graph.setdefault(_layer(me), set()).add(_layer(target))
    cycles = sorted({(a, b) for a, outs in graph.items() for b in outs if a in _reach(graph, b)})
    assert not cycles, f"layers that import each other (edges on a cycle): {cycles}"


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in graph.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen
