"""Misconceptions are data next to each judge, and judge logic stays short.

Each exercise module's misconceptions (id, message, hint ladder) live in
autograder/checks/<module>/misconceptions.toml; judge files use them by id, MISTAKES["<id>"].
Every id a judge uses is declared there, every id declared there is used, and no judge file
declares a misconception in code or grows past MAX_JUDGE_LINES.
"""

import ast
from functools import cache

import pytest

from autograder.authoring import catalogs
from autograder.core import check as core
from autograder.core import misconception_data, paths, registry

MAX_JUDGE_LINES = 600
LOADER = "MISTAKES"  # MISTAKES = misconceptions_of(__name__); another module's: X_MISTAKES


def _judges(module):
    return sorted((paths.CHECKS / module).glob("judge*.py"))


@cache
def _uses():
    """{(module, id)} of every MISTAKES["id"] in a judge file: its own module's, or another's
    imported as `from ..other.judge import MISTAKES as OTHER_MISTAKES`."""
    found = set()
    for module in registry.modules():
        for path in _judges(module):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            owner = {LOADER: module}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level:
                    for alias in node.names:
                        if alias.name == LOADER and alias.asname:
                            owner[alias.asname] = node.module.split(".")[0]
            for node in ast.walk(tree):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                    if node.value.id in owner:
                        assert isinstance(node.slice, ast.Constant), f"{path}:{node.lineno}"
                        found.add((owner[node.value.id], node.slice.value))
    return found


@pytest.mark.parametrize("module", registry.modules())
def test_judges_use_exactly_the_declared_misconceptions(module):
    declared = set(misconception_data.read(misconception_data.data_file(module)))
    used = {mid for owner, mid in _uses() if owner == module}
    assert not used - declared, (
        f"judges use ids {sorted(used - declared)} that "
        f"checks/{module}/misconceptions.toml does not declare"
    )
    assert not declared - used, (
        f"checks/{module}/misconceptions.toml declares ids {sorted(declared - used)} "
        "that no judge uses"
    )


@pytest.mark.parametrize("module", registry.modules())
def test_misconceptions_come_from_the_data_file(module):
    """The registry holds the file's texts under the module's catalog; no judge declares a
    misconception in code."""
    registry.checks_of(module)
    known = core.declared()
    for mid, (message, hints) in misconception_data.read(
        misconception_data.data_file(module)
    ).items():
        assert known[mid] == core.Misconception(mid, message, hints)
        assert catalogs.domain_of(mid) == f"checks-{module}"
    for path in _judges(module):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name | ast.Attribute)
            and getattr(n.func, "id", getattr(n.func, "attr", "")) == "misconception"
        ]
        assert not calls, f"{path.name}:{calls} declares a misconception in code"


@pytest.mark.parametrize("module", registry.modules())
def test_judge_files_stay_short(module):
    for path in _judges(module):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= MAX_JUDGE_LINES, (
            f"checks/{module}/{path.name} has {lines} lines (at most {MAX_JUDGE_LINES}): "
            "move a part into a judge_<part>.py beside it"
        )


def test_extraction_reads_the_data_files():
    """`make translations` takes each module's texts from its file, in the file's order."""
    texts = catalogs.misconception_texts()
    for module in registry.modules():
        want = []
        for mid, (message, hints) in misconception_data.read(
            misconception_data.data_file(module)
        ).items():
            want += [(t, mid) for t in (message, *hints) if t]
        ladders = misconception_data.ladders(module)  # then each exercise's wrong-values ladder
        want += [(t, f"wrong-values ({ex})") for ex, hints in ladders.items() for t in hints]
        assert texts[f"checks-{module}"] == want


def test_a_broken_table_is_refused(tmp_path):
    path = tmp_path / "misconceptions.toml"
    path.write_text('[x-id]\nmessage = "m"\nhint = "typo for a level"\n')
    with pytest.raises(ValueError, match="unknown keys"):
        misconception_data.read(path)
    path.write_text('[x-id]\nidea = "no message"\n')
    with pytest.raises(ValueError, match="needs a message"):
        misconception_data.read(path)
    path.write_text('[x-id]\nmessage = "m"\ncode = "only level 3"\n')
    assert misconception_data.read(path) == {"x-id": ("m", ("", "", "only level 3"))}
