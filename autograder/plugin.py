"""The pytest plugin behind `make grade`: points per check, the table, results.json.

Used as `pytest -p autograder.plugin tests/graded --submission DIR`. Each graded test runs
one Check through the engine; the plugin records its Result (or a timeout, which
pytest-timeout raises inside the test), prints the per-exercise table at the end instead of
tracebacks, writes Gradescope's results.json, and exits 0 whenever grading completed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from . import checks, fixtures, report
from .core import GRADER_ERROR, TIMEOUT, Check, Failure, Result
from .engine import run_check
from .submission import Submission


def pytest_addoption(parser):
    group = parser.getgroup("attention-lab")
    group.addoption("--submission", default=None, help="package folder to grade")
    group.addoption("--ex", default="", help="comma-separated exercise modules to grade")
    group.addoption("--device", dest="grade_device", default="cpu", help="cpu or cuda")
    group.addoption("--results", default="build/results.json", help="results.json path")
    group.addoption(
        "--check-timeout",
        type=float,
        default=None,
        help="seconds per check (default: each check's own limit)",
    )
    group.addoption(
        "--show-printed",
        action="store_true",
        help="show what the student's code printed under every check, not only failing ones",
    )
    group.addoption(
        "--include-slow",
        action="store_true",
        help="also run the slow checks (a training run; `make grade-train`)",
    )


class Grader:
    def __init__(self, config):
        self.submission = Submission(config.getoption("submission"))
        self.device = config.getoption("grade_device")
        self.results_path = Path(config.getoption("results"))
        self.modules = [m for m in config.getoption("ex").split(",") if m]
        self.timeout = config.getoption("check_timeout")
        self.include_slow = config.getoption("include_slow")
        self.show_printed = config.getoption("show_printed")
        self.report_path = self.results_path.parent / "report.html"
        self.results: dict[str, Result] = {}
        self._refs: dict[str, dict] = {}

    def reference(self, check: Check):
        if check.module not in self._refs:
            self._refs[check.module] = fixtures.load(check.module)
        return self._refs[check.module].get(check.slug)

    def grade(self, check: Check) -> Result:
        try:
            reference = self.reference(check)
        except (OSError, ValueError) as e:
            result = Result.of(check, "error", Failure(GRADER_ERROR, error=str(e)))
        else:
            result = run_check(
                check, self.submission, reference, seed=fixtures.PUBLIC_SEED, device=self.device
            )
        self.results[check.id] = result
        return result


_KEY = pytest.StashKey[Grader]()
_GRADED = "tests/graded/"


def pytest_configure(config):
    if config.getoption("submission"):
        config.stash[_KEY] = Grader(config)


@pytest.fixture(scope="session")
def grader(request) -> Grader:
    if _KEY not in request.config.stash:
        pytest.skip("graded suites run through `make grade` (pass --submission DIR)")
    return request.config.stash[_KEY]


def suite(module: str):
    """The graded test function for one exercise module: one test per check."""

    @pytest.mark.parametrize("check", checks.checks_of(module), ids=lambda c: c.slug)
    def test(check: Check, grader: Grader):
        result = grader.grade(check)
        if not result.passed:
            pytest.fail(f"[{result.misconception}] {result.message}", pytrace=False)

    test.__name__ = f"test_{module}"
    return test


def pytest_collection_modifyitems(config, items):
    if _KEY not in config.stash:
        return
    grader = config.stash[_KEY]
    keep, drop = [], []
    for item in items:
        check = getattr(getattr(item, "callspec", None), "params", {}).get("check")
        if check is None:
            continue
        if (grader.modules and check.module not in grader.modules) or (
            check.slow and not grader.include_slow
        ):
            drop.append(item)
            continue
        item.add_marker(pytest.mark.timeout(grader.timeout or check.timeout, method="signal"))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    config = item.config
    check = getattr(getattr(item, "callspec", None), "params", {}).get("check")
    if _KEY not in config.stash or check is None or call.when != "call":
        return rep
    grader = config.stash[_KEY]
    printed = _printed(rep)
    if check.id not in grader.results:  # the test never got to record: a timeout, or worse
        text = str(rep.longrepr or "")
        if "Timeout" in text:
            seconds = grader.timeout or check.timeout
            grader.results[check.id] = Result.of(
                check, "timed out", Failure(TIMEOUT, seconds=f"{seconds:g}")
            )
        else:
            grader.results[check.id] = Result.of(
                check, "error", Failure(GRADER_ERROR, error=text.strip()[-300:])
            )
    if printed:
        grader.results[check.id].extra["printed"] = printed[:20000]  # the table shows 6 lines
    return rep


def _printed(rep) -> str:
    """What the student's code wrote to stdout and stderr during one check (pytest captured
    it; the table shows a few lines of it)."""
    return "".join(text for name, text in rep.sections if name.startswith("Captured std"))


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    """No progress letters for graded checks: the table is the report."""
    if _KEY in config.stash and report.nodeid.startswith(_GRADED):
        return report.outcome, "", ""
    return None


def ordered_results(grader: Grader) -> list[Result]:
    order = {c.id: i for i, c in enumerate(checks.all_checks())}
    return sorted(grader.results.values(), key=lambda r: order[r.check_id])


def pytest_unconfigure(config):
    """After pytest's own last line: the table is the last thing the student reads."""
    if _KEY not in config.stash or not config.stash[_KEY].results:
        return
    grader = config.stash[_KEY]
    results = ordered_results(grader)
    report.write_json(results, grader.results_path)
    title = (
        f"Attention Lab: grading {grader.submission.path} on {grader.device} "
        f"(torch {torch.__version__})"
    )
    table = report.table(results, title, show_printed=grader.show_printed)
    print(f"\n{table}\nResults for Gradescope: {grader.results_path}")
    try:  # the HTML report, beside results.json, with pictures; it never fails the grading
        from . import report_html

        sections = report_html.sections(results, grader.submission, grader._refs)
        path = report_html.write(grader.report_path, results, sections, title)
        print(f"Report with pictures (open it in a browser): {path}")
    except Exception as e:
        print(f"Report: not written ({type(e).__name__}: {e})")
    if any(r.module == "plots" for r in results):
        try:  # the student's heatmaps beside the reference ones; never fails the grading
            from . import heatmaps

            saved = heatmaps.save(grader.submission, grader.results_path.parent / "heatmaps")
            print("Heatmaps (yours beside the reference):\n" + "\n".join(saved))
        except Exception as e:
            print(f"Heatmaps: not saved ({type(e).__name__}: {e})")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _KEY not in config.stash:
        return
    grader = config.stash[_KEY]
    completed = exitstatus in (0, 1) and grader.results
    broken = any(r.status == "error" for r in grader.results.values())
    session.exitstatus = 0 if completed and not broken else (exitstatus or 3)
