"""The command line (issue 25): one file per verb under autograder/channels/cli/, one registry
(cli.VERBS), and every `python -m autograder <verb>` the Makefile and the platforms' scripts
call is a registered verb."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from autograder.channels import cli

pytestmark = pytest.mark.fast

CLI = ROOT / "autograder" / "channels" / "cli"
# Files of the package that are no verb: the registry and main, what several verbs share.
SHARED = {"__init__.py", "options.py", "nbgrader_course.py"}
# Scripts outside the Makefile that call a verb (they run inside a grading platform).
SCRIPTS = [
    ROOT / "autograder" / "channels" / "gradescope" / "run_autograder",
    ROOT / "autograder" / "channels" / "prairielearn.py",
]


def _registered_by_module() -> dict[str, list[str]]:
    """{verb module name: the verbs its register() adds}, each on a parser of its own."""
    found = {}
    for name, module in zip(cli.VERBS, cli.verb_modules(), strict=True):
        verbs = argparse.ArgumentParser().add_subparsers()
        module.register(verbs)
        found[name] = list(verbs.choices)
        assert callable(getattr(module, "run", None)), f"channels/cli/{name}.py has no run(args)"
    return found


def _verbs_of_parser() -> set[str]:
    parser = cli.parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def test_every_verb_has_its_own_file_and_the_registry_lists_them_all():
    by_module = _registered_by_module()
    files = {p.name for p in CLI.glob("*.py")} - SHARED
    assert files == {f"{name}.py" for name in cli.VERBS}, "a verb file the registry misses"
    owners: dict[str, str] = {}
    for name, verbs in by_module.items():
        assert verbs, f"channels/cli/{name}.py registers no verb"
        for verb in verbs:
            assert verb not in owners, f"{verb} is registered by {owners[verb]} and {name}"
            owners[verb] = name
            # its own file: the verb's name; a platform's run verb beside its build verb
            assert verb.replace("-", "_") == name or verb == f"{name}-run", (verb, name)
    assert set(owners) == _verbs_of_parser()
    # each parser runs its own module's code: the verb's run, or its platform's pair
    parser = cli.parser()
    for verb, name in owners.items():
        args = _minimal(parser, verb)
        module = args.run.__module__
        assert module == f"autograder.channels.cli.{name}", (verb, module)


def _minimal(parser: argparse.ArgumentParser, verb: str) -> argparse.Namespace:
    required = {
        "batch": ["--submissions", "x"],
        "new-module": ["--name", "x"],
        "hint": ["--ex", "masks"],
        "regrade": ["--student", "s"],
    }
    return parser.parse_args([verb, *required.get(verb, [])])


def _called_verbs(text: str) -> list[str]:
    """The verbs `-m autograder ...` lines call: the first word after the module that is no
    option, once make's $(...) expressions are taken out."""
    found = []
    for line in text.splitlines():
        if "-m autograder " not in line:
            continue
        rest = line.split("-m autograder ", 1)[1]
        while True:  # $(if $(WARM),--warm $(WARM)): innermost first
            stripped = re.sub(r"\$\([^()]*\)", " ", rest)
            if stripped == rest:
                break
            rest = stripped
        words = rest.split()
        i = 0
        while i < len(words) and words[i].startswith("-"):
            i += 1 + (words[i] in ("--lang", "--warm"))  # a top-level option and its value
        verb = re.match(r"[a-z][a-z_-]*", words[i]) if i < len(words) else None
        if verb:  # `python -m autograder prairielearn-run`, in prose: the word alone
            found.append(verb.group(0))
    return found


def test_every_verb_the_makefile_and_the_platforms_call_is_registered():
    registered = _verbs_of_parser()
    makefile = (ROOT / "Makefile").read_text()
    called = _called_verbs(makefile)
    assert len(called) >= 20, called  # the parser above found the Makefile's calls
    for script in SCRIPTS:
        called += _called_verbs(script.read_text())
    assert {"grade", "watch", "batch", "gradescope-run", "prairielearn-run"} <= set(called)
    missing = sorted(set(called) - registered)
    assert not missing, (
        f"the Makefile or a platform's script calls verbs no module registers: {missing}"
    )


def test_help_lists_every_verb():
    out = subprocess.run(
        [sys.executable, "-m", "autograder", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = set(re.findall(r"^    ([a-z][a-z-]*) ", out, flags=re.M))
    assert _verbs_of_parser() <= listed, _verbs_of_parser() - listed
