"""What `make dist` changes in the files it copies into the student copy.

The judges' models (functions marked `@model` in autograder/core/verdicts.py: what an exercise
computes, correctly or with a named mistake) are working implementations of the exercises.
The student copy keeps their signatures, decorated `@model.left_out`, with the bodies (and
docstrings) left out. There a left-out model answers the calls `make dist` recorded on the
public tier (model_replays.py); on any other call a candidate mistake that needs it is not
named, and a verdict that needs one says the mistake is not named in this copy
(core.UNNAMED). The instructor's copy, and every official grading, has them all.

What ships at all is an allow-list: SHIPS names every path (or glob) of the kit that students
need, and nothing else goes in. Every other file of the kit must match STAYS, the files that
stay with the instructor on purpose; `make dist` refuses while a file matches neither, so a
new file ships only after someone decided that it should (`unlisted`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from ..core import syllabus
from ..trusted import IN_STUDENT_COPY

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
        body = lines[first - 1]
        indent = body[: len(body) - len(body.lstrip())]
        assert node.end_lineno is not None  # ast.parse sets every node's end
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


# What the student copy holds: these paths and globs, and nothing else (a glob's `*` stays
# within one folder, `**` crosses folders; `{module}` is each module of syllabus.MODULES, so
# a module's graded files ship once it is on the syllabus). A file ships when it matches one.
SHIPS = (
    # what students read and run
    "README.md",
    "Makefile",
    ".gitignore",
    "pyproject.toml",
    "requirements.lock",  # the student set (requirements-instructor.lock stays)
    "assignments/__init__.py",
    "assignments/{module}.py",  # the stubs: the student's own files
    "data/*",
    "docs/{module}.md",  # each exercise's page
    "docs/principles.md",
    "docs/report-half-done.png",  # README's picture of the report
    # the graded suites and the grading engine behind make grade / watch / hint / grade-train
    # and the report (and the nbgrader notebooks' test cells: notebook.py)
    "tests/graded/conftest.py",  # loads the grading plugin: `pytest tests/graded/...`
    "tests/graded/test_{module}.py",
    "autograder/__init__.py",
    "autograder/__main__.py",
    "autograder/authoring/__init__.py",
    "autograder/channels/__init__.py",
    "autograder/channels/nbgrader/__init__.py",
    "autograder/core/__init__.py",
    "autograder/feedback/__init__.py",
    "autograder/run/__init__.py",
    "autograder/core/check.py",
    "autograder/core/diagnosis.py",
    "autograder/core/dispatch.py",
    "autograder/run/engine.py",
    "autograder/core/errors.py",
    "autograder/core/fixtures.py",
    "autograder/core/i18n.py",
    "autograder/core/phrases.py",  # i18n words the judges' detail phrases again
    "autograder/feedback/ladder.py",
    "autograder/run/limits.py",
    "autograder/run/measure.py",  # the measured checks' parts (worker.py, engine.run_check)
    "autograder/core/misconception_data.py",  # the judges read checks/<module>/misconceptions.toml
    "autograder/core/model_replays.py",  # the left-out models answer what make dist recorded
    "autograder/notebook.py",
    "autograder/core/paths.py",
    "autograder/plugin.py",
    "autograder/run/probing.py",
    "autograder/feedback/publish.py",  # results.json and report.html, merged across EX= runs
    "autograder/feedback/sinks.py",  # the one after-grading pipeline: a sink per output
    "autograder/core/references.py",
    "autograder/core/registry.py",
    "autograder/feedback/report.py",
    "autograder/feedback/report_html.py",
    "autograder/core/seeds.py",
    "autograder/core/settings.py",  # the run's settings, resolved once (cli, warm, plugin)
    "autograder/run/submission.py",
    "autograder/core/syllabus.py",
    "autograder/core/tolerances.py",
    "autograder/feedback/unicode_math.py",
    "autograder/core/verdicts.py",
    "autograder/run/waiting.py",  # checks that wait on the student's own failing dependency
    "autograder/run/warm.py",
    "autograder/channels/watch.py",
    "autograder/run/worker.py",
    "autograder/run/channel.py",  # the worker's message loop
    "autograder/run/policy.py",  # the worker's crash and timeout policy
    "autograder/run/forkserver.py",  # the warm grader's pre-fork server
    "autograder/run/sandbox/__init__.py",
    "autograder/run/sandbox/wire.py",  # the worker's wire format
    # the command line imports these to list every verb; the instructors' verbs refuse in the
    # copy (the Makefile, before installing anything; cli/stubs.need_solutions): a module
    # per verb (cli.VERBS)
    "autograder/channels/cli/*.py",
    "autograder/channels/batch.py",
    "autograder/channels/lms.py",  # batch.py reads learning platforms' download names
    "autograder/channels/class_report.py",
    "autograder/channels/similarity.py",  # class_report.py imports it
    "autograder/core/course_config.py",  # seeds.py reads the course's settings
    "autograder/channels/gradescope/__init__.py",
    "autograder/channels/prairielearn.py",
    "autograder/run/sandbox/jail.py",  # batch.py's limits
    "autograder/authoring/scaffold.py",
    "autograder/authoring/stubgen.py",
    "autograder/authoring/student_copy.py",
    # the checks (judges' models left out: copied), public fixtures (and whatever else
    # `make fixtures` stores there), translations
    "autograder/checks/__init__.py",
    "autograder/checks/{module}/*.py",
    "autograder/checks/{module}/misconceptions.toml",
    "autograder/checks/{module}/wrong_values.toml",
    "autograder/checks/{module}/checks.toml",
    "autograder/fixtures/*",
    "autograder/locale/*/LC_MESSAGES/kit.po",
    "autograder/locale/*/LC_MESSAGES/checks-{module}.po",
    # the stand-ins that are PyTorch built-ins under the exercises' names (trusted/__init__.py)
    "autograder/trusted/__init__.py",
    *(f"autograder/trusted/{m}.py" for m in IN_STUDENT_COPY),
)

# What stays with the instructor on purpose: every file of the kit that SHIPS leaves out
# must match one of these (the solutions and what is derived from them by hand, working
# stand-ins, the kit's own tests, the nbgrader, batch and platform machinery's files).
STAYS = (
    "solutions/**",
    "tests/kit/**",
    "tests/data/**",  # the kit tests' data (PrairieLearn's published schemas)
    "course/**",
    "tools/**",
    "bench/**",
    ".ci/**",
    "CHANGELOG.md",
    "requirements-instructor.lock",
    "docs/*.md",  # the instructors' pages (batch, nbgrader, course, extending)
    "autograder/trusted/*.py",  # implementations of exercises (trusted.NOT_IN_STUDENT_COPY)
    "autograder/channels/nbgrader/course.py",
    "autograder/channels/nbgrader/collect.py",
    "autograder/channels/nbgrader/export.py",
    "autograder/channels/nbgrader/records.py",
    "autograder/channels/nbgrader/autograde.py",
    "autograder/channels/nbgrader/kernel.py",  # make autograde's confined kernels
    "autograder/channels/nbgrader/preprocess.py",  # what nbgrader_config.py loads
    "autograder/authoring/catalogs.py",  # make translations
    "autograder/channels/nbgrader/feedback_template/**",
    "autograder/channels/gradescope/*",
    "autograder/run/sandbox/*.py",  # the official graders' sandbox
)


def _pattern(glob: str) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\*\*|\*|\?)", glob):
        out += {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(out)


def _patterns(globs: Iterable[str], modules: Iterable[str]) -> list[re.Pattern[str]]:
    found = []
    for glob in globs:
        for one in [glob.replace("{module}", m) for m in modules] if "{module}" in glob else [glob]:
            found.append(_pattern(one))
    return found


def ships(relative: str, modules: Iterable[str] = syllabus.MODULES) -> bool:
    """Whether kit file `relative` (a path from the kit's root, with /) is in the student copy."""
    return any(p.fullmatch(relative) for p in _patterns(SHIPS, modules))


def classify(
    files: Iterable[str], modules: Iterable[str] = syllabus.MODULES
) -> tuple[list[str], list[str]]:
    """(the files that ship, the files that match neither SHIPS nor STAYS), each sorted."""
    modules = list(modules)
    shipped, stays = _patterns(SHIPS, modules), _patterns(STAYS, modules)
    found, unlisted = [], []
    for f in sorted(files):
        if any(p.fullmatch(f) for p in shipped):
            found.append(f)
        elif not any(p.fullmatch(f) for p in stays):
            unlisted.append(f)
    return found, unlisted
