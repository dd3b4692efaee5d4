"""pytest as a first-class runner: `pytest tests/graded/test_attention.py` is an ordinary
pytest run (autograder/plugin.py): an item per check, a lost check fails its item with the
misconception's message and hints, -k / -x / --lf select as everywhere, exit code 1 when a
check fails; a stub's checks are skipped and a check waiting on an own dependency is xfailed.
make grade's own path (the table, exit 0) is test_grading_path.py's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import KIT, ROOT, SOLUTIONS, declared_losses, grade_folder, submission_with

from autograder.core import i18n, registry
from autograder.run import submission
from autograder.trusted import NOT_IN_STUDENT_COPY

MUTANT = KIT / "mutants" / "attention" / "divides_by_sqrt_d_v.py"


def run_pytest(tmp_path: Path, folder: Path, *args: str, files=("attention",), prelude=""):
    """A plain pytest run of the graded suites of `files` on `folder`, in a fresh process:
    (the process, {check id: (outcome, text)} read from its JUnit XML)."""
    xml = tmp_path / "junit.xml"
    xml.unlink(missing_ok=True)
    argv = [f"tests/graded/test_{m}.py" for m in files]
    argv += ["--submission", str(folder), "-o", f"cache_dir={tmp_path / 'cache'}"]
    argv += ["--junitxml", str(xml), *args]
    code = prelude + "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env["COLUMNS"] = "200"  # the short summary's lines whole
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcomes = {}
    if xml.exists():
        for case in ET.parse(xml).iter("testcase"):
            name = case.get("name", "")  # test_attention[scale]: the check attention.scale
            check_id = name.removeprefix("test_").replace("[", ".").rstrip("]")
            outcome, text = "passed", ""
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = child.get("type", child.tag) if child.tag == "skipped" else child.tag
                    text = (child.get("message") or "") + "\n" + (child.text or "")
            outcomes[check_id] = (outcome, text)
    return proc, outcomes


def fast_checks(module: str) -> list[str]:
    return [c.id for c in registry.checks_of(module) if not c.slow]


def declared(path: Path, module: str = "attention") -> set[str]:
    return {f"{module}.{slug}" for slug in declared_losses(path) or ()}


@pytest.fixture(scope="module")
def mutant(tmp_path_factory) -> Path:
    """solutions/ with attention.py replaced by a mutant that loses two checks."""
    return submission_with(tmp_path_factory.mktemp("mutant"), {"attention": MUTANT.read_text()})


def test_solutions_pass_every_item(tmp_path):
    proc, outcomes = run_pytest(tmp_path, SOLUTIONS, files=("attention", "masks"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = fast_checks("attention") + fast_checks("masks")
    assert sorted(outcomes) == sorted(ids)
    assert {o for o, _ in outcomes.values()} == {"passed"}
    assert f"{len(ids)} passed" in proc.stdout


def test_a_mutant_fails_exactly_its_checks_and_lf_reruns_only_those(tmp_path, mutant):
    lost = [r for r in grade_folder(mutant, ["attention"]) if not r.passed]
    assert {r.check_id for r in lost} == declared(MUTANT)
    # masks.py leaves a mark when it is imported: where it is graded
    mark = tmp_path / "masks-imported"
    masks = (SOLUTIONS / "masks.py").read_text()
    (mutant / "masks.py").write_text(f"open({str(mark)!r}, 'a').close()\n{masks}")
    try:
        proc, outcomes = run_pytest(tmp_path, mutant, files=("attention", "masks"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert mark.exists()
        mark.unlink()
        # --lf: only the items that failed run, and only the module they need is graded
        rerun, again = run_pytest(tmp_path, mutant, "--lf", files=("attention", "masks"))
    finally:
        (mutant / "masks.py").write_text(masks)
    failed = {check for check, (outcome, _) in outcomes.items() if outcome == "failure"}
    assert failed == {r.check_id for r in lost}
    passed = fast_checks("attention") + fast_checks("masks")
    assert {outcomes[c][0] for c in passed if c not in failed} == {"passed"}
    for r in lost:  # the misconception, its message and hints: pytest's failure text
        text = outcomes[r.check_id][1]
        assert f"[{r.misconception}] {i18n.message(r)}" in text
        assert "Hint 1/3" in text and "Hint 2/3" in text and "Hint 3/3" not in text
    # the short summary names the misconception; no traceback of the kit's own code
    assert "test_attention[scale] - Failed: [wrong-scale]" in proc.stdout
    assert "Traceback" not in proc.stdout and "autograder/plugin.py" not in proc.stdout

    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert {c: o for c, (o, _) in again.items()} == dict.fromkeys(failed, "failure")
    assert not mark.exists()


def test_k_and_x_select_as_in_any_pytest_run(tmp_path, mutant):
    proc, outcomes = run_pytest(tmp_path, mutant, "-k", "scale or float64")
    assert proc.returncode == 1
    assert {c: o for c, (o, _) in outcomes.items()} == {
        "attention.scale": "failure",
        "attention.float64": "passed",
    }
    proc, outcomes = run_pytest(tmp_path, mutant, "-x")  # reference fails first: stop there
    assert proc.returncode == 1 and "stopping after 1 failures" in proc.stdout
    assert {c: o for c, (o, _) in outcomes.items()} == {"attention.reference": "failure"}


def test_stubs_are_skipped_as_not_attempted(tmp_path, pristine_stubs):
    proc, outcomes = run_pytest(tmp_path, pristine_stubs, "-rs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(outcomes) == sorted(fast_checks("attention"))
    assert {o for o, _ in outcomes.values()} == {"pytest.skip"}
    assert "scaled_dot_product_attention is not attempted yet" in outcomes["attention.scale"][1]
    # pytest's folded summary: one line per exercise, at the suite's own file
    sdpa = [c for c in registry.checks_of("attention") if "scaled_dot" in c.exercise]
    suite = (ROOT / "tests" / "graded" / "test_attention.py").read_text().splitlines()
    n = next(i for i, line in enumerate(suite, 1) if line.startswith("test_attention ="))
    where = f"tests/graded/test_attention.py:{n}"
    assert f"SKIPPED [{len(sdpa)}] {where}: scaled_dot_product_attention" in proc.stdout


def test_waiting_checks_are_xfailed_and_advice_notes_pass_with_a_warning(tmp_path):
    """The student copy (no stand-in for blocks.py, simulated as test_waiting.py does): with
    a bug in the student's blocks.py, gpt's checks it breaks wait (xfail) and nothing of
    gpt.py fails; a multihead.py that loops over the heads gets the 0-point advice as a
    warning, and its item passes."""
    loop = KIT / "mutants" / "multihead" / "loop_over_heads.py"
    folder = submission_with(tmp_path, {"multihead": loop.read_text()})
    good = (folder / "blocks.py").read_text()
    bug = 'h = F.gelu(h) if self.activation == "gelu" else F.relu(h)'
    assert bug in good
    (folder / "blocks.py").write_text(good.replace(bug, "h = F.relu(h)"))
    keep = sorted(set(submission.trusted_modules()) - set(NOT_IN_STUDENT_COPY))
    prelude = (
        f"from autograder.run import submission; submission.trusted_modules = lambda: {keep!r}\n"
    )
    files = ("multihead", "gpt")
    proc, outcomes = run_pytest(tmp_path, folder, "-rx", files=files, prelude=prelude)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    waited = {c: text for c, (o, text) in outcomes.items() if o == "pytest.xfail"}
    assert waited and all("waiting on blocks.py" in text for text in waited.values())
    assert {c.split(".")[0] for c in waited} == {"gpt"}
    assert {o for c, (o, _) in outcomes.items() if c not in waited} == {"passed"}
    (advice,) = {c for c in fast_checks("multihead") if not registry.find(c).points}
    assert f"test_multihead[{advice.split('.')[1]}]" in proc.stdout
    assert "AdviceNote: [mha-loop-over-heads]" in proc.stdout
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
