"""Stubs teach, they do not answer: the TODO text never spells out a line of the solution.

The rule (autograder/authoring/stubgen.py, "hint leaks"): no non-trivial line of a solution region
may appear, whitespace ignored, in the comments or docstrings of the stub generated from it. A
trivial line holds only names, keywords and `, : ( ) =` and no call (`else:`,
`return out, weights`); every other line is a computation, and a hint that spells it out
is the answer.
"""

import re

import pytest
from conftest import SOLUTIONS

from autograder.authoring import stubgen

pytestmark = pytest.mark.fast

FILES = sorted(p for p in SOLUTIONS.glob("*.py") if stubgen.BEGIN in p.read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_no_solution_line_appears_in_the_stub_text(path):
    regions = stubgen.hint_leaks(path.read_text(), path.name)
    assert regions, f"{path.name} has no solution region"
    leaks = [f"{r['exercise']}: {line}" for r in regions for line in r["leaked"]]
    assert not leaks, (
        f"the stub of {path.name} gives these solution lines away in its comments or "
        "docstrings; state the goal, equation, shapes and functions instead:\n  "
        + "\n  ".join(leaks)
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_todo_states_a_size_budget(path):
    headers = re.findall(r"# TODO \((\w[\w.]*)\):(.*)", path.read_text())
    assert len(headers) == len(stubgen.hint_leaks(path.read_text(), path.name))
    budget = re.compile(r"\b(\d+|one|two)\s+lines?\b")
    missing = [name for name, text in headers if not budget.search(text)]
    assert not missing, f"TODO without a size budget ('about N lines'): {missing}"


def test_the_rule_catches_a_leak_and_spares_trivial_lines():
    source = (
        "def f(q, k):\n"
        '    """Return the scores."""\n'
        "    # TODO (f): about 2 lines. scores = q @ k.transpose(-2, -1)\n"
        "    ### BEGIN SOLUTION\n"
        "    scores = q @ k.transpose(-2, -1)  # (L, S)\n"
        "    return scores\n"
        "    ### END SOLUTION\n"
    )
    (region,) = stubgen.hint_leaks(source, "m.py")
    assert region["exercise"] == "f" and region["code_lines"] == 2
    assert region["leaked"] == ["scores = q @ k.transpose(-2, -1)  # (L, S)"]
    # The same hint said in words leaks nothing.
    worded = source.replace("scores = q @ k.transpose(-2, -1)\n", "q times k transposed\n", 1)
    assert stubgen.hint_leaks(worded, "m.py")[0]["leaked"] == []


@pytest.mark.parametrize(
    ("line", "trivial"),
    [
        ("return out, weights", True),
        ("else:", True),
        ("m = m_new", True),
        ("for block in blocks:", True),
        ("for block in self.blocks:", False),
        (")  # closes a call", True),
        ("return acc / l", False),
        ("model.eval()", False),
        ("x = x[:, -1]", False),
        ("if T > self.max_len:", False),
        ("B, T, D = x.shape", False),
    ],
)
def test_trivial_lines(line, trivial):
    assert stubgen.is_trivial(line) is trivial
