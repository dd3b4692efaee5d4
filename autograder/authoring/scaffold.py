"""`make new-module NAME=x`: every file an exercise module needs, ready to fill in.

Writes the solution (markers, TODO text, "Exercise group N"), the checks package (probe side
and judge side, one example check), the trusted stand-in, the graded suite, one mutant and one
alternative, the course text and the docs page; appends the module to syllabus.MODULES and to
README's module table. Then run `make stubs fixtures` and grade it. docs/extending.md says
what to write in each file; tests/kit/test_completeness.py fails until the module has enough
mutants, alternatives and text.
"""

# ruff: noqa: E501  (the templates are files, their lines are not ours to wrap)
from __future__ import annotations

import re
from pathlib import Path

from ..core import paths, syllabus

NAME = re.compile(r"^[a-z][a-z0-9_]{1,30}$")


class ScaffoldError(ValueError):
    pass


def _files(name: str, group: int) -> dict[str, str]:
    title = name.replace("_", " ")
    return {
        f"solutions/{name}.py": f'''"""Exercise group {group}: {title}.

TODO(kit author): what this module teaches, in two or three sentences, and the shape legend
(B batch, T sequence length, D = d_model) it uses.
"""

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    """Return 2 * x (TODO(kit author): replace with the real exercise).

    x: (..., D) -> (..., D), same dtype and device.
    """
    # TODO (double): multiply the input by two.
    # Use only tensor arithmetic; about 1 line.
    ### BEGIN SOLUTION
    return x * 2
    ### END SOLUTION
''',
        f"autograder/checks/{name}/__init__.py": f'"""Checks for {name}.py."""\n',
        f"autograder/checks/{name}/probe.py": f'''"""Probe side of {name}.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
"""

from __future__ import annotations

import torch

from ...run.probing import randn


def inputs_basic(gen: torch.Generator) -> dict:
    B = int(torch.randint(1, 4, (), generator=gen))  # every size is drawn from the seed
    return {{"x": randn(gen, B, 5, 8)}}


def probe_double(mod, x: dict) -> dict:
    return {{"out": mod.double(x["x"])}}
''',
        f"autograder/checks/{name}/judge.py": f'''"""Judge side of {name}.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

from ...core.check import CheckList
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, tensor
from . import probe

CHECKS = CheckList("{name}")

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: texts and hint ladders
DOUBLE = CHECKS.exercise("double", probe=probe.probe_double)


@DOUBLE.check("reference", inputs=probe.inputs_basic)
def verdict_reference(got, want, x):
    out = tensor(got, "out", "the output", shape=want["out"].shape, dtype=want["out"].dtype)
    candidates = [(MISTAKES["{name}-adds-instead"], lambda: x["x"] + 2, {{}})]
    assert_close(out, want["out"], "the output", candidates)
''',
        f"autograder/checks/{name}/checks.toml": f"""# The checks of {name}.py, in the order students meet them: one table per slug, with its
# title (an English text, the msgid of checks-{name}.po) and its points.

[reference]
title = "matches the reference"
points = 1
""",
        f"autograder/checks/{name}/misconceptions.toml": f"""# The misconceptions of {name}.py's checks: one table per id; message and hint levels (idea,
# operation, code) are English templates, the msgids of checks-{name}.po.

[{name}-adds-instead]
message = "You added x to 2 instead of multiplying it by 2."
idea = "Doubling a number scales it; adding a constant shifts it."
operation = "Use multiplication, elementwise over the tensor."
code = "Multiply x by 2 (not x + 2)."
""",
        f"autograder/checks/{name}/wrong_values.toml": f"""# The hint ladder of "wrong-values" for each exercise of {name}.py (the values differ and
# no misconception names why): one table per exercise, each level about its own computation.

[double]
idea = "Doubling multiplies every entry of x by 2, and changes nothing else."
operation = "One elementwise multiplication of the tensor x by the number 2."
code = "return x * 2 (or torch.mul(x, 2))"
""",
        f"autograder/trusted/{name}.py": f'''"""Trusted {name}, used when another module that imports it is graded.

Built from PyTorch built-ins where one exists; a kit test proves it equal to the solution.
It stays out of the student copy (trusted.IN_STUDENT_COPY does not list it): a working
implementation of the exercise must not reach students.
"""

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    return torch.mul(x, 2)
''',
        f"tests/graded/test_{name}.py": f'''"""Graded suite for {name}.py: one test per check in autograder/checks/{name}/."""

from autograder.plugin import suite

test_{name} = suite("{name}")
''',
        f"tests/kit/mutants/{name}/adds_instead.py": f'''"""Mutant: adds 2 instead of multiplying by 2."""

# expects: {name}-adds-instead
from solutions.{name} import *  # noqa: F403


def double(x):
    return x + 2
''',
        f"tests/kit/alternatives/{name}/add_to_itself.py": f'''"""Alternative: x + x is 2 x."""

from solutions.{name} import *  # noqa: F403


def double(x):
    return x + x
''',
        f"autograder/locale/zh_CN/LC_MESSAGES/checks-{name}.po": _EXAMPLE_PO,
        f"course/text/{name}.md": f"# {title.capitalize()}\n\nTODO(kit author): the teaching "
        "text of the notebook, with the equations in LaTeX ($...$).\n",
        f"docs/{name}.md": f"# {title.capitalize()}\n\nTODO(kit author): what the exercise "
        "teaches, what its checks prove, the misconceptions they name, and any finding the "
        "kit measured (with the command that measured it).\n",
    }


# The example misconception in Simplified Chinese (`make translations` adds the texts of the
# misconceptions you write; translate them by hand, with the field's terms).
_EXAMPLE_PO = """msgid ""
msgstr ""
"Project-Id-Version: Attention Lab\\n"
"Language: zh_CN\\n"
"MIME-Version: 1.0\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Content-Transfer-Encoding: 8bit\\n"
"Plural-Forms: nplurals=1; plural=0;\\n"

msgid "You added x to 2 instead of multiplying it by 2."
msgstr "你把 x 加上了 2，而不是乘以 2。"

msgid "Doubling a number scales it; adding a constant shifts it."
msgstr "加倍是对数值做缩放；加上一个常数则是平移。"

msgid "Use multiplication, elementwise over the tensor."
msgstr "对张量逐元素做乘法。"

msgid "Multiply x by 2 (not x + 2)."
msgstr "把 x 乘以 2（不是 x + 2）。"

msgid "Doubling multiplies every entry of x by 2, and changes nothing else."
msgstr "加倍就是把 x 的每个元素乘以 2，别的什么都不变。"

msgid "One elementwise multiplication of the tensor x by the number 2."
msgstr "对张量 x 逐元素乘以数 2，一次乘法即可。"

msgid "return x * 2 (or torch.mul(x, 2))"
msgstr "return x * 2（或 torch.mul(x, 2)）"
"""


def create(name: str, root: Path = paths.ROOT) -> list[Path]:
    """Write the module's files under `root`; refuses to overwrite anything."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ScaffoldError(
            f"NAME={name!r}: expected a module name in lower case (letters, digits, _), "
            "e.g. NAME=rotary"
        )
    if name in syllabus.MODULES:
        raise ScaffoldError(f"{name!r} is already an exercise module")
    files = _files(name, len(syllabus.MODULES) + 1)
    clash = [f for f in files if (root / f).exists()]
    if clash:
        raise ScaffoldError(f"these files exist already, nothing was written: {clash}")
    written = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    _append_to_syllabus(name, root / "autograder" / "core" / "syllabus.py")
    _append_to_readme(name, root / "README.md")
    return written


def _append_to_syllabus(name: str, path: Path) -> None:
    text = path.read_text()
    head, tail = text.split("MODULES: tuple[str, ...] = (\n", 1)
    body, rest = tail.split("\n)\n", 1)
    path.write_text(f'{head}MODULES: tuple[str, ...] = (\n{body}\n    "{name}",\n)\n{rest}')


def _append_to_readme(name: str, path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if re.match(r"^\| `[a-z_0-9]+\.py` \|", line)]
    if not rows:
        raise ScaffoldError("README.md has no module table to extend")
    lines.insert(rows[-1] + 1, f"| `{name}.py` | TODO(kit author): what students write |\n")
    path.write_text("".join(lines))
