"""build/results.json and build/report.html hold every module graded so far (publish.py).

`make grade EX=m` and `make grade-train` merge into them (a module graded again replaces only
its own entries), a full `make grade` replaces them, another SUBMISSION starts fresh, each
module carries the time it was graded, and two gradings that publish at once both land.
"""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SOLUTIONS, submission_with, warm_grader

from autograder.core import registry
from autograder.core.check import Result
from autograder.feedback import publish, report_html

WRONG_MASK = ("triu(diagonal=1)", "triu(diagonal=0)")  # blocks the diagonal: loses points
FAST_CHECKS = [c for c in registry.all_checks() if not c.slow]


def _make(target: str, results: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`make <target>` as a student types it, on this interpreter's environment: make grade
    on the warm grader, as from a student's second grading on (conftest.warm_grader)."""
    cmd = ["make", "-s", target, f"VENV={sys.prefix}", "WARM=1", f"RESULTS={results}"]
    cmd += [f"SUBMISSION={folder}", *args]
    env = {**os.environ, "MAKEFLAGS": "", "LANGUAGE": "en"}
    env["ATTENTION_LAB_WARM_DIR"] = str(warm_grader())
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def _by_module(data: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for t in data["tests"]:
        module = t["name"].split(": ", 1)[0]
        assert t["extra_data"]["module"] == module, t
        found.setdefault(module, []).append(t)
    return found


def _valid(data: dict) -> dict[str, list[dict]]:
    """Gradescope's documented keys, the total recomputed over every test, and each module's
    time the same in its tests and in the top-level map; returns the tests by module."""
    assert set(data) >= {"score", "tests"}
    for t in data["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output"}
        assert t["status"] in ("passed", "failed")
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert data["max_score"] == sum(t["max_score"] for t in data["tests"])
    modules = _by_module(data)
    times = data["extra_data"]["modules"]
    assert list(times) == list(modules)  # course order, one entry per module
    for m, tests in modules.items():
        assert {t["extra_data"]["graded_at"] for t in tests} == {times[m]["graded_at"]}
        assert times[m]["score"] == sum(t["score"] for t in tests)
        datetime.datetime.fromisoformat(times[m]["graded_at"])  # ISO 8601
    return modules


def _now() -> datetime.datetime:
    """This moment, to the second, as results.json records a grading's time: a grading
    started after it is recorded at it or later, one that ended before it at it or earlier
    (a warm grading takes less than a second)."""
    return datetime.datetime.now().astimezone().replace(microsecond=0)


def _graded_at(data: dict) -> dict[str, datetime.datetime]:
    return {
        m: datetime.datetime.fromisoformat(v["graded_at"])
        for m, v in data["extra_data"]["modules"].items()
    }


def _page(results: Path) -> dict[str, str]:
    """{module: the time its heading shows} of report.html; each module with pictures has
    its picture blocks."""
    sections = _sections(results)
    for module, (_when, body) in sections.items():
        assert '<div class="picture' in body or module not in report_html.PICTURES, module
    return {m: when for m, (when, _body) in sections.items()}


def _sections(results: Path) -> dict[str, tuple[str, str]]:
    """{module: (the time its heading shows, the rest of its section)} of report.html."""
    text = (results.parent / "report.html").read_text(encoding="utf-8")
    pattern = (
        r'<section id="([a-z_]+)"><h2>\1\.py <span class="when">graded ([^<]+)</span>(.*?)'
        r"</section>"
    )
    return {m: (when, body) for m, when, body in re.findall(pattern, text, flags=re.S)}


def _drawn(results: Path, module: str) -> int:
    """How many images of the student's outputs `module`'s section holds."""
    return _sections(results)[module][1].count('src="data:image/png;base64,')


def test_ex_runs_and_grade_train_merge_a_regrade_replaces_its_module_a_full_run_everything(
    tmp_path,
):
    folder = submission_with(tmp_path)
    results = tmp_path / "build" / "results.json"
    _make("grade", results, folder, "EX=attention")
    first = json.loads(results.read_text())
    assert set(_valid(first)) == {"attention"}

    between = _now()
    proc = _make("grade", results, folder, "EX=masks")
    second = json.loads(results.read_text())
    modules = _valid(second)
    assert set(modules) == {"attention", "masks"}
    assert modules["attention"] == _by_module(first)["attention"]  # kept as it was
    times = _graded_at(second)
    assert times["attention"] <= between <= times["masks"], times
    assert (
        second["score"]
        == second["max_score"]
        == first["score"] + sum(c.points for c in FAST_CHECKS if c.module == "masks")
    )
    page = _page(results)
    assert page == {m: publish.shown(second["extra_data"]["modules"][m]["graded_at"]) for m in page}
    assert set(page) == {"attention", "masks"}
    drawn = _drawn(results, "attention")
    assert drawn > 0 and _drawn(results, "masks") > 0  # attention's pictures are kept
    assert "Kept from earlier gradings" in proc.stdout
    (kept,) = [line for line in proc.stdout.splitlines() if line.startswith("  attention.py")]
    assert page["attention"] in kept and kept.endswith(f"{first['score']:g} / {first['score']:g}")

    # masks again, now with a mistake: only masks' entries change
    masks = folder / "masks.py"
    masks.write_text(masks.read_text().replace(*WRONG_MASK))
    between = _now()
    _make("grade", results, folder, "EX=masks")
    third = json.loads(results.read_text())
    modules = _valid(third)
    assert modules["attention"] == _by_module(first)["attention"]
    assert times["masks"] <= between <= _graded_at(third)["masks"]
    assert any("causal-blocks-diagonal" in t["tags"] for t in modules["masks"])
    lost = second["score"] - third["score"]
    assert lost > 0 and lost == sum(t["max_score"] - t["score"] for t in modules["masks"])
    assert set(_page(results)) == {"attention", "masks"}
    assert "causal-blocks-diagonal" in (results.parent / "report.html").read_text()
    assert _drawn(results, "attention") == drawn

    # make grade-train: gpt, llama and induction with their training runs, merged beside
    # the others
    _make("grade-train", results, folder)
    fourth = json.loads(results.read_text())
    modules = _valid(fourth)
    assert set(modules) == {"attention", "masks", "gpt", "llama", "induction"}
    assert list(modules) == [m for m in registry.modules() if m in modules]
    assert modules["masks"] == _by_module(third)["masks"]
    assert any(t["name"].startswith("gpt: train") for t in modules["gpt"])
    assert set(_page(results)) == set(modules)
    assert _drawn(results, "attention") == drawn and _drawn(results, "gpt") > 0
    assert not (tmp_path / "build" / "results-train.json").exists()

    # a full run replaces everything: one time for all, no training check (not run)
    between = _now()
    _make("grade", results, folder)
    full = json.loads(results.read_text())
    modules = _valid(full)
    assert len(full["tests"]) == len(FAST_CHECKS)
    assert not any(t["name"].startswith("gpt: train") for t in full["tests"])
    assert len(set(_graded_at(full).values())) == 1
    assert _graded_at(third)["masks"] <= between <= _graded_at(full)["attention"]
    assert set(_page(results)) == set(registry.modules())
    parts = publish.parts_folder(results)
    assert sorted(p.stem for p in parts.glob("*.json")) == sorted(registry.modules())


def test_another_submission_starts_fresh(tmp_path):
    one = submission_with(tmp_path / "one")
    two = submission_with(tmp_path / "two")
    results = tmp_path / "build" / "results.json"
    _make("grade", results, one, "EX=masks")
    assert json.loads(results.read_text())["extra_data"]["submission"] == str(one.resolve())
    proc = _make("grade", results, two, "EX=attention")
    data = json.loads(results.read_text())
    assert set(_valid(data)) == {"attention"}
    assert data["extra_data"]["submission"] == str(two.resolve())
    assert set(_page(results)) == {"attention"}
    assert f"held the results of another submission ({one.resolve()})" in proc.stdout


def test_two_gradings_at_once_both_land(tmp_path):
    folder = submission_with(tmp_path)
    results = tmp_path / "build" / "results.json"
    cmd = ["make", "-s", "grade", f"VENV={sys.prefix}", "WARM=1", f"RESULTS={results}"]
    cmd += [f"SUBMISSION={folder}"]
    env = {**os.environ, "MAKEFLAGS": "", "ATTENTION_LAB_WARM_DIR": str(warm_grader())}
    runs = [
        subprocess.Popen(cmd + [f"EX={m}"], cwd=ROOT, env=env, stdout=subprocess.PIPE)
        for m in ("attention", "masks")
    ]
    for run in runs:
        run.communicate(timeout=600)
        assert run.returncode == 0
    assert set(_valid(json.loads(results.read_text()))) == {"attention", "masks"}
    assert set(_page(results)) == {"attention", "masks"}


# --------------------------------------------------------------------------- in process


def _results(module: str, passed: bool = True) -> list[Result]:
    checks = [c for c in registry.checks_of(module) if not c.slow]
    return [Result.of(c, "passed" if passed else "failed") for c in checks]


def _publish(results_path: Path, module: str, folder: Path, full: bool = False, passed=True):
    rs = _results(module, passed)
    stamp = publish.now()
    sections = {module: report_html.section(module, rs, "", graded_at=publish.shown(stamp))}
    return publish.publish(
        rs,
        submission=folder,
        results_path=results_path,
        hints=None,
        sections=sections,
        graded_at=stamp,
        title="T",
        full=full,
    )


@pytest.mark.fast
def test_publish_merges_replaces_and_drops_an_unreadable_part(tmp_path):
    results = tmp_path / "results.json"
    _publish(results, "masks", SOLUTIONS)
    _publish(results, "attention", SOLUTIONS, passed=False)
    data = json.loads(results.read_text())
    assert list(_valid(data)) == ["attention", "masks"]  # course order, not grading order
    assert data["score"] == sum(c.points for c in FAST_CHECKS if c.module == "masks")

    published = _publish(results, "attention", SOLUTIONS)
    assert [p.module for p in published.kept] == ["masks"] and not published.replaced
    assert json.loads(results.read_text())["score"] == published.max_score

    (publish.parts_folder(results) / "masks.json").write_text("{not json")
    published = _publish(results, "positional", SOLUTIONS)
    assert [p.module for p in published.parts] == ["attention", "positional"]
    assert published.problems and "masks.json" in published.problems[0]
    assert "could not be read" in "\n".join(publish.summary_lines(published))

    published = _publish(results, "masks", SOLUTIONS, full=True)
    assert [p.module for p in published.parts] == ["masks"]
    assert list(_valid(json.loads(results.read_text()))) == ["masks"]


@pytest.mark.fast
def test_a_missing_section_keeps_the_module_in_the_report_without_pictures(tmp_path):
    results = tmp_path / "results.json"
    _publish(results, "masks", SOLUTIONS)
    rs = _results("attention")
    published = publish.publish(
        rs,
        submission=SOLUTIONS,
        results_path=results,
        hints=None,
        sections=None,  # the pictures failed
        graded_at=publish.now(),
        title="T",
        full=False,
    )
    assert published.report is not None
    page = published.report.read_text()
    assert '<section id="attention">' in page and '<section id="masks">' in page
    assert "The pictures of this module could not be drawn." in page


def _publisher(results: str, module: str, rounds: int) -> None:
    for _ in range(rounds):
        _publish(Path(results), module, SOLUTIONS)


@pytest.mark.fast
def test_concurrent_publishers_lose_nothing(tmp_path):
    """Several processes publish their own module again and again into one results.json:
    every module is there at the end, and every file is whole."""
    results = tmp_path / "results.json"
    modules = registry.modules()[:6]
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_publisher, args=(str(results), m, 4)) for m in modules]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    data = json.loads(results.read_text())
    assert list(_valid(data)) == modules
    page = (tmp_path / "report.html").read_text()
    assert all(f'<section id="{m}">' in page for m in modules)
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.rglob("*.tmp"))


@pytest.mark.fast
def test_a_publisher_waits_for_the_lock(tmp_path):
    """While one grading holds the lock, another's publish waits, then lands."""
    results = tmp_path / "results.json"
    ctx = multiprocessing.get_context("fork")
    with publish.locked(results):
        proc = ctx.Process(target=_publisher, args=(str(results), "masks", 1))
        proc.start()
        proc.join(3)
        assert proc.is_alive() and not results.exists()
    proc.join(60)
    assert proc.exitcode == 0
    assert list(_valid(json.loads(results.read_text()))) == ["masks"]
