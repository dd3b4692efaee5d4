#!/usr/bin/env python3
"""Move autograder/'s modules into folders that show the architecture, and rewrite every
reference to them (issue 25, item 4).

    python tools/relayout.py --check    the plan: moves, files rewritten, what needs a person
    python tools/relayout.py --apply    git mv, rewrite, write the docstrings, ruff the result
    python tools/relayout.py --docstring   print autograder/__init__.py's generated docstring
    python tools/relayout.py --write-docstring   ... and write it there (after adding a module)

The mapping (MOVES, and EXTRA for files other branches add) says where each file directly in
autograder/ goes. --apply then:
  1. `git mv`s each file (or folder) whose old path still exists;
  2. rewrites every tracked text file: imports (absolute, and relative ones recomputed from
     each file's new place with ast; `from autograder import a, b` in strings too), dotted
     names in strings (`"autograder.warm"`, monkeypatch targets, `-m` modules), paths
     (`autograder/worker.py`, `"autograder" / "syllabus.py"`), package-relative names in
     quotes (`"sandbox/child.py"`), a renamed file's name in prose ("(course_judge.py)"), and
     `Path(__file__).parents[n] / "x"` expressions, aimed again at where "x" is now;
  3. writes each new subpackage's __init__.py (a docstring, no imports), adds them to the
     student copy's SHIPS, and regenerates the package docstring (autograder/__init__.py)
     that names every module with the first sentence of its own docstring;
  4. runs ruff (imports sorted, format) on the Python files it changed, wraps the lines the
     longer paths made too long (comments, docstrings, a string alone on its line), and
     re-stamps the public fixtures' manifests that were fresh before the move with the hashes
     of the rewritten checks (only their import lines changed; the outputs are the same).
A second run finds nothing to move and changes nothing. Files directly in autograder/ that
no table maps are reported and stop --apply (add them to EXTRA, or --leave-unmapped).
CHANGELOG.md is history and is never rewritten.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "autograder"

# --- the mapping: old path under autograder/ -> new path under autograder/ -----------------
# The lead's table: files other branches add directly in autograder/ (only those present
# move; an entry whose file does not exist is ignored).
EXTRA = {
    "settings.py": "core/settings.py",
    "sinks.py": "feedback/sinks.py",
    "pipeline.py": "feedback/pipeline.py",
    "forkserver.py": "run/forkserver.py",
    "runner.py": "run/runner.py",
    "placement.py": "run/placement.py",
    "run.py": "run/__init__.py",  # `autograder.run` stays the same import path
    "hints.py": "feedback/hints.py",
    "results.py": "core/results.py",
    "types.py": "core/types.py",
    "policy.py": "run/policy.py",
    "channel.py": "run/channel.py",
    "misconception_data.py": "core/misconception_data.py",
}

MOVES = {
    # core/: what every layer shares; imports no other subpackage (see test_layout.py)
    "core.py": "core/check.py",
    "verdicts.py": "core/verdicts.py",
    "diagnosis.py": "core/diagnosis.py",
    "tolerances.py": "core/tolerances.py",
    "references.py": "core/references.py",
    "fixtures.py": "core/fixtures.py",
    "model_replays.py": "core/model_replays.py",
    "registry.py": "core/registry.py",
    "syllabus.py": "core/syllabus.py",
    "seeds.py": "core/seeds.py",
    "course_config.py": "core/course_config.py",
    "i18n.py": "core/i18n.py",
    "dispatch.py": "core/dispatch.py",
    "paths.py": "core/paths.py",
    "errors.py": "core/errors.py",
    # run/: running a check (probe side, worker, sandbox, pre-fork servers)
    "engine.py": "run/engine.py",
    "probing.py": "run/probing.py",
    "submission.py": "run/submission.py",
    "worker.py": "run/worker.py",
    "waiting.py": "run/waiting.py",
    "limits.py": "run/limits.py",
    "warm.py": "run/warm.py",
    "sandbox": "run/sandbox",
    # feedback/: what a student reads after grading
    "report.py": "feedback/report.py",
    "report_html.py": "feedback/report_html.py",
    "publish.py": "feedback/publish.py",
    "ladder.py": "feedback/ladder.py",
    "unicode_math.py": "feedback/unicode_math.py",
    # channels/: where grading is asked for
    "cli.py": "channels/cli/__init__.py",
    "options.py": "channels/cli/options.py",
    "batch.py": "channels/batch.py",
    "prairielearn.py": "channels/prairielearn.py",
    "watch.py": "channels/watch.py",
    "class_report.py": "channels/class_report.py",
    "gradescope": "channels/gradescope",
    "course.py": "channels/nbgrader/course.py",
    "course_cli.py": "channels/cli/nbgrader_course.py",
    "course_collect.py": "channels/nbgrader/collect.py",
    "course_export.py": "channels/nbgrader/export.py",
    "course_judge.py": "channels/nbgrader/autograde.py",
    "feedback_template": "channels/nbgrader/feedback_template",
    # authoring/: the instructor's tools that write the kit's files
    "stubgen.py": "authoring/stubgen.py",
    "scaffold.py": "authoring/scaffold.py",
    "student_copy.py": "authoring/student_copy.py",
    "catalogs.py": "authoring/catalogs.py",
}

# What stays directly in autograder/: the public entry points, whose import paths released
# notebooks, nbgrader test cells, pytest's `-p` and `python -m` rely on; and the folders
# per exercise module (checks/<m>/, trusted/<m>.py, fixtures/<m>.*, locale's checks-<m>.po).
KEEP = {"__init__.py", "__main__.py", "notebook.py", "plugin.py"}
KEEP_DIRS = {"checks", "trusted", "fixtures", "locale", "__pycache__"}

# Each subpackage's role: its __init__.py docstring and its heading in the package docstring.
ROLES = {
    "core": "What every layer shares: checks and misconceptions, verdict helpers, reference "
    "outputs, tolerances, the syllabus, seeds, paths, translations. Imports no other "
    "subpackage.",
    "run": "Running a check: the probe side, the forked worker, the confined sandbox, the "
    "pre-fork servers. Imports core (and checks/, trusted/).",
    "feedback": "What a student reads after grading: the table, results.json, report.html, "
    "the hint ladder. Imports core and run.",
    "channels": "Where grading is asked for: the command line, batch, Gradescope, "
    "PrairieLearn, the nbgrader course, watch, the class report. May import every layer.",
    "channels/cli": "`python -m autograder <verb>`: one module per verb (register, run), "
    "listed in the one registry, cli.VERBS.",
    "channels/nbgrader": "The nbgrader course: notebooks from solutions/, nbgrader's verbs, "
    "collecting, autograding outside the kernel, exporting grades.",
    "authoring": "The instructor's tools that write the kit's files: stubs, new modules, the "
    "student copy, translation catalogs. Imports core, run and feedback.",
}
ORDER = ["core", "run", "run/sandbox", "feedback", "channels", "channels/cli", "channels/nbgrader",
         "channels/gradescope", "authoring"]  # fmt: skip
DATA = {
    "checks": "checks/<m>/: probe*.py (student side) and judge*.py (verdicts) of module <m>",
    "trusted": "trusted/<m>.py: trusted stand-ins, to grade each module in isolation",
    "fixtures": "fixtures/<m>.json, .npz: the public tier's reference outputs (make fixtures)",
    "locale": "locale/<lang>/LC_MESSAGES/: the gettext catalogs (kit.po, checks-<m>.po)",
}
NEVER_REWRITE = {"CHANGELOG.md", "tools/relayout.py", "tests/kit/test_layout.py"}
BINARY = {".npz", ".png", ".mo", ".zip", ".gz", ".pyc", ".jpg", ".pdf"}


def git(*args: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=check, capture_output=True, text=True
    ).stdout


def mapping() -> dict[str, str]:
    """Every entry of MOVES and EXTRA, old -> new (relative to autograder/)."""
    out = dict(MOVES)
    for old, new in EXTRA.items():
        out.setdefault(old, new)
    return out


class Plan:
    """What moves now (old path still there), and how names and paths map."""

    def __init__(self) -> None:
        self.pkg = ROOT / PKG
        self.all = mapping()
        self.moves = {
            o: n for o, n in self.all.items() if (self.pkg / o).exists() and not o.startswith("#")
        }
        self.clash = [o for o, n in self.moves.items() if (self.pkg / n).exists()]
        self.unmapped = sorted(
            p.name
            for p in self.pkg.iterdir()
            if p.name not in self.all
            and p.name not in KEEP
            and p.name not in KEEP_DIRS
            and p.name not in {top.split("/")[0] for top in self.all.values()}
            and (p.suffix == ".py" or p.is_dir())
        )
        # dotted module names (only python modules and packages)
        self.modules: dict[str, str] = {}
        self.dirs: dict[str, str] = {}  # folders moved whole (path prefix)
        self.files: dict[str, str] = {}  # files moved (path)
        for old, new in self.moves.items():
            if (self.pkg / old).is_dir():
                self.dirs[old] = new
                if (self.pkg / old / "__init__.py").exists():
                    self.modules[old] = new.replace("/", ".")
            else:
                self.files[old] = new
                if old.endswith(".py"):
                    target = new.removesuffix(".py").removesuffix("/__init__")
                    self.modules[old.removesuffix(".py")] = target.replace("/", ".")

    def module(self, dotted: str) -> str:
        """Old absolute module name -> new one (unchanged when nothing of it moved)."""
        parts = dotted.split(".")
        if parts[0] != PKG or len(parts) < 2:
            return dotted
        rest = ".".join(parts[1:])
        for old, new in sorted(self.modules.items(), key=lambda kv: -len(kv[0])):
            if rest == old or rest.startswith(old + "."):
                return f"{PKG}.{new}{rest[len(old) :]}"
        return dotted

    def path(self, rel: str) -> str:
        """Old path (from the repo root) -> new path."""
        if not rel.startswith(PKG + "/"):
            return rel
        inner = rel[len(PKG) + 1 :]
        if inner in self.files:
            return f"{PKG}/{self.files[inner]}"
        for old, new in sorted(self.dirs.items(), key=lambda kv: -len(kv[0])):
            if inner == old or inner.startswith(old + "/"):
                return f"{PKG}/{new}{inner[len(old) :]}"
        return rel

    def is_module(self, dotted: str) -> bool:
        """Whether `dotted` names a module or package of the old tree."""
        base = ROOT / dotted.replace(".", "/")
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    # ------------------------------------------------------------------ text rules
    def text_rule(self) -> re.Pattern[str] | None:
        if not self.moves:
            return None
        mods = "|".join(re.escape(m) for m in sorted(self.modules, key=len, reverse=True))
        files = [re.escape(f) + r"(?![\w])" for f in sorted(self.files, key=len, reverse=True)]
        dirs = [re.escape(d) + r"(?![\w.-])" for d in sorted(self.dirs, key=len, reverse=True)]
        targets = "|".join(files + dirs)
        # Package-relative names: whole quoted strings ("core.py", "sandbox/child.py": lists
        # of files under autograder/) become the new relative path; in prose, only a file
        # whose own name changes is renamed ("(course_judge.py)"), the rest keep their name.
        quoted = "|".join(
            [re.escape(f) for f in sorted(self.files, key=len, reverse=True)]
            + [re.escape(d) + r"/[\w./*]*" for d in self.dirs]
        )
        renamed = "|".join(
            re.escape(f) + r"(?![\w])"
            for f, n in self.files.items()
            if f.endswith(".py") and Path(n).name != f
        )
        alts = [rf'(?P<join>"{PKG}"(?P<sep>\s*/\s*)"(?P<jt>{targets})")']
        # `from autograder import a, b` in a string (code run by `python -c`) or in prose
        alts.append(rf"(?<![\w.])from {PKG} import (?P<fi>\w+(?:, \w+)*)(?![\w,])")
        if mods:
            alts.append(rf"(?<![\w.]){PKG}\.(?P<mod>{mods})(?![\w])")
        alts.append(rf"(?<![\w.-]){PKG}/(?P<path>{targets})")
        alts.append(rf"(?<=[\"'])(?P<quoted>{quoted})(?=[\"'])")
        if renamed:
            alts.append(rf"(?<![\w/.-])(?P<bare>{renamed})")
        return re.compile("|".join(alts))

    def replace(self, m: re.Match[str]) -> str:
        if m.group("fi"):
            aliases = [ast.alias(n.strip()) for n in m.group("fi").split(",")]
            groups = regroup(PKG, aliases, self)
            return "; ".join(f"from {t} import {_names(a)}" for t, a in groups.items())
        if m.group("join"):
            new = self.path(f"{PKG}/{m.group('jt')}")[len(PKG) + 1 :]
            sep = m.group("sep")
            return f'"{PKG}"' + "".join(f'{sep}"{part}"' for part in new.split("/"))
        if m.groupdict().get("mod"):
            return self.module(f"{PKG}.{m.group('mod')}")
        if m.group("path"):
            return self.path(f"{PKG}/{m.group('path')}")
        if m.group("quoted"):
            return self.path(f"{PKG}/{m.group('quoted')}")[len(PKG) + 1 :]
        return self.files[m.group("bare")]


# --- Python: imports (ast) and Path(__file__) ---------------------------------------------


def _package_of(rel: str) -> list[str]:
    """The package a module at `rel` (path from the root) imports relative to."""
    parts = rel.removesuffix(".py").split("/")
    return parts[:-1]


def _relative(target: str, package: list[str]) -> tuple[int, str]:
    """(level, module) to import absolute `target` relatively from `package`."""
    t = target.split(".")
    common = 0
    while common < min(len(t), len(package)) and t[common] == package[common]:
        common += 1
    return len(package) - common + 1, ".".join(t[common:])


def _names(aliases: list[ast.alias]) -> str:
    return ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in aliases)


def regroup(old: str, aliases: list[ast.alias], plan: Plan) -> dict[str, list[ast.alias]]:
    """`from old import aliases` -> {new module: the aliases imported from it}: a name that
    is a module that moved is imported from its new package, under the name it had."""
    groups: dict[str, list[ast.alias]] = {}
    for alias in aliases:
        sub = f"{old}.{alias.name}"
        if alias.name != "*" and plan.is_module(sub) and plan.module(sub) != sub:
            parent, leaf = plan.module(sub).rsplit(".", 1)
            bound = alias.asname or alias.name
            groups.setdefault(parent, []).append(ast.alias(leaf, None if leaf == bound else bound))
        else:
            groups.setdefault(plan.module(old), []).append(alias)
    return groups


def rewrite_import(node: ast.ImportFrom, old_rel: str, new_rel: str, plan: Plan) -> str | None:
    """The statement(s) replacing `node` (None: unchanged)."""
    if node.level:
        if not old_rel.startswith(PKG + "/"):
            return None
        pkg = _package_of(old_rel)
        base = pkg[: len(pkg) - node.level + 1]
        old = ".".join(base + ([node.module] if node.module else []))
    else:
        old = node.module or ""
    if old != PKG and not old.startswith(PKG + "."):
        return None
    groups = regroup(old, node.names, plan)
    new_pkg = _package_of(new_rel)
    lines = []
    for target, aliases in groups.items():
        if node.level:
            level, module = _relative(target, new_pkg)
            lines.append(f"from {'.' * level}{module} import {_names(aliases)}")
        else:
            level, module = 0, target
            lines.append(f"from {target} import {_names(aliases)}")
    if len(groups) == 1 and (level, module) == (node.level, node.module or ""):
        if [(a.name, a.asname) for a in aliases] == [(a.name, a.asname) for a in node.names]:
            return None  # the same statement: keep it as written
    return "\n".join(lines)


_FILE = re.compile(
    r"Path\(__file__\)(?P<resolve>\.resolve\(\))?"
    r"(?P<up>(?:\.parent(?!s))+|\.parents\[(?P<n>\d+)\])"
    r'(?P<rest>(?:\s*/\s*"[^"{}]+")*)'
)


def rewrite_file_refs(text: str, old_rel: str, new_rel: str, plan: Plan) -> str:
    """Path(__file__)...parents[n] / "a": aimed again at where the target is now."""

    def one(m: re.Match[str]) -> str:
        up = int(m.group("n")) + 1 if m.group("n") else m.group("up").count(".parent")
        if up > len(Path(old_rel).parents):
            return m.group(0)
        old_base = Path(old_rel).parents[up - 1]
        rest = re.findall(r'"([^"]+)"', m.group("rest"))
        old_target = old_base.joinpath(*rest).as_posix()
        new_target = Path(plan.path(old_target))
        new_file = Path(new_rel)
        ups = [
            k for k, a in enumerate(new_file.parents) if a == new_target or a in new_target.parents
        ]
        if not ups:
            return m.group(0)
        k = ups[0]
        parts = new_target.relative_to(new_file.parents[k]).parts
        if k == up - 1 and list(parts) == rest:
            return m.group(0)
        hop = ".parent" if k == 0 else f".parents[{k}]"
        tail = "".join(f' / "{p}"' for p in parts)
        return f"Path(__file__){m.group('resolve') or ''}{hop}{tail}"

    return _FILE.sub(one, text)


def rewrite_python(text: str, old_rel: str, new_rel: str, plan: Plan, rule, notes) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return rewrite_text(text, plan, rule)
    lines = text.splitlines(keepends=True)
    spans: list[tuple[int, int, str]] = []  # (first line, last line, replacement)
    real = {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        new = rewrite_import(node, old_rel, new_rel, plan)
        if new is None:
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        head = lines[first - 1][: node.col_offset]
        if head.strip():
            notes.append(f"{new_rel}:{first}: an import shares its line; not rewritten")
            continue
        span = "".join(lines[first - 1 : last])
        comments = [c for c in re.findall(r"#[^\n]*", span) if c]
        tail = lines[last - 1][(node.end_col_offset or 0) :]
        body = textwrap.indent(new, head)
        if comments and len(comments) > (1 if "#" in tail else 0):
            notes.append(f"{new_rel}:{first}: comments inside an import were dropped: {comments}")
        spans.append((first, last, body + tail if tail.strip() else body + "\n"))
    out, at = [], 0
    for first, last, replacement in sorted(spans):
        segment = "".join(lines[at : first - 1])
        out.append(rewrite_between(segment, at + 1, real, old_rel, plan, rule, notes))
        out.append(replacement)
        at = last
    out.append(rewrite_between("".join(lines[at:]), at + 1, real, old_rel, plan, rule, notes))
    result = "".join(out)
    return rewrite_file_refs(result, old_rel, new_rel, plan)


# Code in string literals (templates) whose relative imports are written for another place:
# file -> where that code lands (old paths; it does not move).
STRING_CONTEXT = {
    f"{PKG}/scaffold.py": f"{PKG}/checks/newmodule/probe.py",  # checks/<m>/probe.py, judge.py
}
_STRING_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<dots>\.+)(?P<module>[\w.]*) import (?P<names>[\w, ]+)$"
)


def rewrite_between(
    text: str, start: int, real: set[int], old_rel: str, plan: Plan, rule, notes: list[str]
) -> str:
    """Text between the file's own import statements rewritten (from line `start`): the text
    rules, and the one-line relative imports that code in strings holds (templates), from
    where that code lands. `real`: the lines of the file's own imports, left as they are."""
    out = []
    for n, line in enumerate(text.splitlines(keepends=True), start):
        m = _STRING_IMPORT.match(line.rstrip("\n"))
        if n in real:
            out.append(line)
            continue
        if not m:
            out.append(rewrite_text(line, plan, rule))
            continue
        aliases = []
        for part in m.group("names").split(","):
            name, _, asname = part.strip().partition(" as ")
            aliases.append(ast.alias(name.strip(), asname.strip() or None))
        node = ast.ImportFrom(m.group("module") or None, aliases, len(m.group("dots")))
        node.lineno = node.col_offset = 0
        where = STRING_CONTEXT.get(old_rel, old_rel)
        new = rewrite_import(node, where, where, plan)
        if new is None:
            out.append(line)
        elif old_rel in STRING_CONTEXT:
            end = "\n" if line.endswith("\n") else ""
            out.append(textwrap.indent(new, m.group("indent")) + end)
        else:
            notes.append(f"{old_rel}: a relative import in a string, not rewritten: {line.strip()}")
            out.append(line)
    return "".join(out)


def rewrite_text(text: str, plan: Plan, rule) -> str:
    return rule.sub(plan.replace, text) if rule else text


# --- lines the longer names made too long ----------------------------------------------------

LIMIT = 100  # pyproject.toml's line-length


def _cut(text: str, room: int, braces: bool = False) -> int:
    """Where to cut `text` (after a space) so the first part fits `room` (0: nowhere)."""
    depth, best = 0, 0
    for i, ch in enumerate(text[:room]):
        if braces and ch in "{}":
            depth += 1 if ch == "{" else -1
        elif ch == " " and depth == 0 and i > 0:
            best = i + 1
    return best


def wrap_long_lines(text: str, rel: str, notes: list[str], keep: set[str] = frozenset()) -> str:
    """Wrap the lines over LIMIT: comments, docstring lines, and a string literal alone on
    its line inside brackets (split into two adjacent literals). Others are noted. Lines in
    `keep` (the file's lines before the rewrite) stay as they were."""
    lines = text.splitlines(keepends=True)
    if not any(len(line.rstrip("\n")) > LIMIT for line in lines):
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs.update(range(value.lineno + 1, (value.end_lineno or value.lineno) + 1))
                docs.add(value.lineno)
    depth_at: dict[int, int] = {}
    depth = 0
    for i, line in enumerate(lines, 1):
        depth_at[i] = depth
        if i not in docs:
            for ch in re.sub(r"#.*|\"[^\"]*\"|'[^']*'", "", line):
                depth += (ch in "([{") - (ch in ")]}")
    out: list[str] = []
    lines = [line.rstrip("\n") for line in lines]
    at = 0
    while at < len(lines):
        i, body = at + 1, lines[at]
        at += 1
        if len(body) <= LIMIT or "noqa" in body or body in keep:
            out.append(body)
            continue
        indent = body[: len(body) - len(body.lstrip())]
        stripped = body.lstrip()
        lit = re.fullmatch(r"([rbfuRBFU]{0,2})(\"[^\"]*\")(\s*[,)]?)", stripped)
        prose = stripped.startswith("#") or i in docs
        if prose and (cut := _cut(body, LIMIT + 1)):
            lead = indent + ("# " if stripped.startswith("#") else "")
            rest = body[cut:]
            nxt = lines[at] if at < len(lines) else ""
            same = nxt.startswith(lead) and nxt[len(lead) :][:1] not in ("", " ", "-", "*")
            same = same and (i + 1 in docs) == (i in docs) and '"""' not in nxt
            if same:  # reflow: the rest joins the next line of the same paragraph
                lines[at] = f"{lead}{rest} {nxt[len(lead) :]}"
            else:
                lines.insert(at, f"{lead}{rest}")
                docs = {d + 1 if d > i else d for d in docs} | ({i + 1} if i in docs else set())
            out.append(body[:cut].rstrip())
            continue
        if lit and depth_at.get(i, 0) > 0:
            prefix, quoted, tail = lit.groups()
            room = LIMIT - len(indent) - len(prefix) - 1
            cut = _cut(quoted[1:-1], room - 1, braces="f" in prefix.lower())
            if cut:
                first, rest = quoted[1:-1][:cut], quoted[1:-1][cut:]
                out += [f'{indent}{prefix}"{first}"', f'{indent}{prefix}"{rest}"{tail}']
                continue
        notes.append(f"{rel}:{i}: over {LIMIT} characters after the rewrite: wrap it by hand")
        out.append(body)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


# --- the docstrings -------------------------------------------------------------------------


# Modules without a docstring of their own: their line in the package docstring.
NO_DOCSTRING = {
    "__main__.py": "`python -m autograder`: the warm grader's client, else the command line.",
}


def first_sentence(path: Path) -> str:
    if path.name in NO_DOCSTRING and path.parent.name == PKG:
        return NO_DOCSTRING[path.name]
    try:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    except SyntaxError:
        doc = ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    m = re.match(r"(.+?[.!?])(\s|$)", para)
    return (m.group(1) if m else para) or "(no docstring)"


def _entry(name: str, role: str, indent: int, width: int = 22) -> list[str]:
    pad = " " * indent
    head = f"{pad}{name}".ljust(indent + width - 1) + " "
    return textwrap.wrap(
        role,
        width=96,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_on_hyphens=False,
    )


def subpackages(pkg: Path) -> list[str]:
    """Folders of the package that hold code (relative), in ORDER, then any others."""
    found = sorted(
        p.parent.relative_to(pkg).as_posix()
        for p in pkg.rglob("__init__.py")
        if p.parent != pkg and p.parent.relative_to(pkg).parts[0] not in KEEP_DIRS
    )
    return [s for s in ORDER if s in found] + [s for s in found if s not in ORDER]


def package_docstring(pkg: Path | None = None) -> str:
    """autograder/__init__.py's docstring: every module, each with its own first sentence."""
    pkg = pkg or ROOT / PKG
    out = [
        "Attention Lab's grading engine, one folder per layer. A layer imports only the layers",
        "before it: core (trusted/ beside it), run (checks/ beside it), feedback, authoring,",
        "channels; tests/kit/test_layout.py holds that direction and the few imports against",
        "it.",
        "",
        "    top level             the entry points whose import paths users rely on",
    ]
    for f in sorted(pkg.glob("*.py")):
        if f.name != "__init__.py":
            out += _entry(f.name, first_sentence(f), 8)
    for sub in subpackages(pkg):
        folder = pkg / sub
        role = ROLES.get(sub) or first_sentence(folder / "__init__.py")
        out.append("")
        out += _entry(f"{sub}/", role, 4)
        for f in sorted(folder.glob("*.py")):
            if f.name != "__init__.py":
                out += _entry(f.name, first_sentence(f), 8)
    out.append("")
    for name, role in DATA.items():
        out += _entry(f"{name}/", role, 4)
    return "\n".join(out)


def write_package_docstring(pkg: Path) -> bool:
    init = pkg / "__init__.py"
    text = init.read_text()
    tree = ast.parse(text)
    doc = package_docstring(pkg)
    new_doc = '"""' + doc + '\n"""\n'
    if (
        tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(tree.body[0].value, ast.Constant)
    ):
        end = tree.body[0].end_lineno or 1
        rest = "".join(text.splitlines(keepends=True)[end:])
    else:
        rest = text
    new = new_doc + rest
    if new != text:
        init.write_text(new)
        return True
    return False


def init_text(sub: str) -> str:
    role = ROLES.get(sub, f"The {sub} layer.")
    lines = textwrap.wrap(role, width=96)
    lines[0] = '"""' + lines[0]
    return "\n".join(
        lines + ["", "Its modules, each with its role: autograder/__init__.py.", '"""', ""]
    )


SHIPS_ANCHOR = f'    "{PKG}/__main__.py",\n'


def add_to_ships(new_inits: list[str]) -> list[str]:
    """Add the new subpackages' __init__.py to the student copy's SHIPS (they hold only a
    docstring; the modules in them ship or stay by their own entries)."""
    copy = ROOT / PKG / "authoring" / "student_copy.py"
    if not copy.exists():
        return [f"{copy} not found: add {new_inits} to SHIPS by hand"]
    text = copy.read_text()
    missing = [i for i in new_inits if f'"{i}"' not in text]
    if not missing:
        return []
    if SHIPS_ANCHOR not in text:
        return [f"SHIPS has no line {SHIPS_ANCHOR.strip()}: add {missing} by hand"]
    add = "".join(f'    "{i}",\n' for i in missing)
    copy.write_text(text.replace(SHIPS_ANCHOR, SHIPS_ANCHOR + add, 1))
    return []


# --- the fixtures' manifests ------------------------------------------------------------------

HASHES = """
import json, sys
from pathlib import Path
from {fixtures} import source_hashes
out = {{}}
for m in sys.argv[1:]:
    try:
        out[m] = source_hashes(m)
    except Exception as e:  # a module the registry does not know: left as it is
        out[m] = {{"error": repr(e)}}
print(json.dumps(out))
"""


def source_hashes(python: str, fixtures_module: str) -> dict[str, dict[str, str]] | None:
    """{module: its manifest's source hashes as the kit computes them now} (None: failed)."""
    manifests = sorted((ROOT / PKG / "fixtures").glob("*.json"))
    modules = [p.stem for p in manifests if "." not in p.stem]
    proc = subprocess.run(
        [python, "-c", HASHES.format(fixtures=fixtures_module), *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode:
        print(f"!!! the fixtures' source hashes could not be computed:\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def restamp(before: dict | None, after: dict | None) -> list[str]:
    """The manifests that were fresh before the move get the hashes of the rewritten sources
    (only their import lines changed): the outputs are the same, so is the seed, the torch
    version, the CPU seconds. A manifest that was stale before stays stale."""
    if before is None or after is None:
        return ["fixtures' manifests not re-stamped: run `make fixtures` after the move"]
    notes = []
    for module, old in before.items():
        path = ROOT / PKG / "fixtures" / f"{module}.json"
        text = path.read_text()
        meta = json.loads(text)
        new = after.get(module, {})
        if "error" in old or "error" in new:
            notes.append(
                f"{path.name}: hashes not computed ({old.get('error') or new.get('error')})"
            )
            continue
        if any(meta.get(k) != v for k, v in old.items()):
            notes.append(f"{path.name} was stale before the move: run `make fixtures`")
            continue
        for key, value in old.items():
            if new[key] != value:
                text = text.replace(f'"{key}": "{value}"', f'"{key}": "{new[key]}"', 1)
        path.write_text(text)
    return notes


# --- the run ---------------------------------------------------------------------------------


def tracked_text_files() -> list[str]:
    files = [f for f in git("ls-files").splitlines() if f]
    return [
        f
        for f in files
        if f not in NEVER_REWRITE and Path(f).suffix not in BINARY and (ROOT / f).is_file()
    ]


def compute(plan: Plan) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """{new path: (old text, new text)} for every file whose text changes, and notes."""
    rule = plan.text_rule()
    notes: list[str] = []
    changes: dict[str, tuple[str, str]] = {}
    for rel in tracked_text_files():
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new_rel = plan.path(rel)
        if rel.endswith(".py"):
            new = rewrite_python(text, rel, new_rel, plan, rule, notes)
        else:
            new = rewrite_text(text, plan, rule)
        if new_rel != rel and rel.endswith(".py") and "__file__" in new:
            for i, line in enumerate(new.splitlines(), 1):
                bare = re.search(r"(?<![\w.])__file__(?!\s*=)", line)
                if bare and not _FILE.search(line) and not line.lstrip().startswith("#"):
                    notes.append(f"{new_rel}:{i}: __file__ used in a moved file: check {line!r}")
        if new != text:
            changes[new_rel] = (text, new)
    return changes, notes


def ruff(files: list[str]) -> None:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists() and not shutil.which(exe):
        print("ruff not found: run `ruff check --select I --fix` and `ruff format` yourself")
        return
    py = [f for f in files if f.endswith(".py") and not f.startswith("assignments/")]
    if py:
        subprocess.run([exe, "check", "--select", "I", "--fix", "-q", *py], cwd=ROOT)
        subprocess.run([exe, "format", "-q", *py], cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="print the plan, change nothing")
    mode.add_argument("--apply", action="store_true", help="move and rewrite")
    mode.add_argument("--docstring", action="store_true", help="print the package docstring")
    mode.add_argument(
        "--write-docstring", action="store_true", help="write it into autograder/__init__.py"
    )
    ap.add_argument("--diff", action="store_true", help="with --check: the full diff")
    ap.add_argument("--leave-unmapped", action="store_true", help="apply despite unmapped files")
    venv = ROOT / ".venv" / "bin" / "python"
    ap.add_argument(
        "--python",
        default=str(venv) if venv.exists() else sys.executable,
        help="the kit's Python (torch), to re-stamp the fixtures' manifests (default: .venv)",
    )
    args = ap.parse_args(argv)
    if args.docstring:
        print(package_docstring())
        return 0
    if args.write_docstring:
        changed = write_package_docstring(ROOT / PKG)
        print("autograder/__init__.py " + ("written" if changed else "already up to date"))
        return 0
    plan = Plan()
    print(f"moves ({len(plan.moves)}):")
    for old, new in plan.moves.items():
        print(f"  autograder/{old:<22} -> autograder/{new}")
    if plan.unmapped:
        print("\n!!! NOT IN THE MAPPING (add to EXTRA at the top of tools/relayout.py):")
        for name in plan.unmapped:
            print(f"!!!   autograder/{name}")
    if plan.clash:
        print(f"\n!!! both old and new paths exist: {plan.clash}")
        return 2
    changes, notes = compute(plan)
    print(f"\nfiles rewritten ({len(changes)}):")
    for rel, (old, new) in sorted(changes.items()):
        diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))
        n = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
        print(f"  {rel}: {n} lines")
        if args.diff:
            print("\n".join("    " + d for d in diff[2:]))
    for note in notes:
        print(f"!!! {note}")
    if not args.apply:
        return 0
    if plan.unmapped and not args.leave_unmapped:
        print("\nrefused: map the files above (EXTRA) or pass --leave-unmapped")
        return 2
    fixtures_module = plan.module(f"{PKG}.fixtures")
    before = source_hashes(args.python, f"{PKG}.fixtures") if plan.moves else None
    for old, new in plan.moves.items():
        src, dst = ROOT / PKG / old, ROOT / PKG / new
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.rmtree(src / "__pycache__", ignore_errors=True)
        git("mv", str(src.relative_to(ROOT)), str(dst.relative_to(ROOT)))
    for rel, (_old, new) in changes.items():
        (ROOT / rel).write_text(new, encoding="utf-8")
    pkg = ROOT / PKG
    created = []
    for sub in subpackages(pkg) + [
        d.relative_to(pkg).as_posix()
        for d in pkg.rglob("*")
        if d.is_dir()
        and d.relative_to(pkg).parts[0] not in KEEP_DIRS
        and d.name != "__pycache__"
        and "feedback_template" not in d.parts
        and any(d.glob("*.py"))
    ]:
        init = pkg / sub / "__init__.py"
        if not init.exists():
            init.write_text(init_text(sub))
            created.append(f"{PKG}/{sub}/__init__.py")
    created.sort()
    if created:
        git("add", *created)
        print(f"\ncreated: {created}")
    for note in add_to_ships(created):
        print(f"!!! {note}")
    touched = list(changes) + created + [f"{PKG}/authoring/student_copy.py"]
    if write_package_docstring(pkg):
        touched.append(f"{PKG}/__init__.py")
    if plan.moves:
        touched = [t for t in touched if (ROOT / t).exists()]
        ruff(touched)
        late: list[str] = []
        for rel in touched:
            if rel.endswith(".py"):
                text = (ROOT / rel).read_text()
                kept = set(changes[rel][0].splitlines()) if rel in changes else set()
                wrapped = wrap_long_lines(text, rel, late, kept)
                if wrapped != text:
                    (ROOT / rel).write_text(wrapped)
        ruff(touched)
        for note in late:
            print(f"!!! {note}")
        after = source_hashes(args.python, fixtures_module)
        for note in restamp(before, after):
            print(f"!!! {note}")
    print("\ndone" if plan.moves else "\nnothing to move: the layout is in place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
