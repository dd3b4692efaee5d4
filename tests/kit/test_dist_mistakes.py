"""The student copy names every mistake the kit names (tools/student_copy_check.py --strict).

Every solution, alternative and mutant is graded in both kits: the same checks lost with the
same mistake ids (the copy's models answer what make dist recorded on the public tier:
autograder/core/model_replays.py). The variants are graded in chunks of whole modules, each chunk
a test and a unit of `make test`'s scheduler of its own (conftest.py), so that its two
workers share them;
test_the_chunks_cover_every_module_once proves that together they grade every module.
"""

import subprocess
import sys
import tarfile

import pytest
from conftest import ROOT

from autograder.core import model_replays, registry

CHUNKS = 4


def chunks() -> list[list[str]]:
    """The modules in CHUNKS lists of about as many variants each (the most variants first,
    each into the chunk with the fewest so far)."""
    sizes = {m: len(model_replays.variants(m, ROOT)) for m in registry.modules()}
    found: list[list[str]] = [[] for _ in range(CHUNKS)]
    for module in sorted(sizes, key=lambda m: (-sizes[m], m)):
        min(found, key=lambda c: sum(sizes[m] for m in c)).append(module)
    return [sorted(c) for c in found if c]


def _unpack(archive, where):
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        tar.extractall(where, filter="data")
    return names, where / "attention-lab"


def test_the_chunks_cover_every_module_once():
    found = [m for chunk in chunks() for m in chunk]
    assert sorted(found) == sorted(registry.modules()) and len(found) == len(set(found)), found


@pytest.mark.parametrize(
    "modules",
    [pytest.param(c, id=f"chunk{i}") for i, c in enumerate(chunks())],
)
def test_student_copy_names_every_mistake_the_kit_names(modules, student_copy_archive, tmp_path):
    names, copy = _unpack(student_copy_archive, tmp_path)
    shipped = {n.removeprefix("attention-lab/autograder/fixtures/") for n in names}
    assert {"attention.models.json", "attention.models.npz", "kvcache.models.npz"} <= shipped
    check = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "student_copy_check.py"), "--copy", str(copy)]
        + ["--strict", "--modules", ",".join(modules)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout[-6000:] + check.stderr[-3000:]
    variants = sum(len(model_replays.variants(m, ROOT)) for m in modules)
    assert f"{variants} variants of {len(modules)} modules graded in both kits" in check.stdout
    assert "0 mutant(s) charged more, 0 named differently, 0 wrong" in check.stdout, check.stdout
