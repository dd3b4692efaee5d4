"""The pytest plugin behind `make grade`: points per check, the table, results.json.

Used as `pytest -p autograder.plugin tests/graded --submission DIR`. The plugin object
(GradingPlugin, registered in pytest_configure) grades each selected module once through the
engine (probes in a forked worker with CPU-time limits, verdicts in this process), hands
each graded test its Result, prints the per-exercise table at the end instead of tracebacks,
merges the modules graded into Gradescope's results.json and the HTML report (publish.py:
each module graded so far, at its latest), and exits 0 whenever grading completed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from . import limits, publish, registry, sinks, waiting, worker
from .core import Check, Result, Status
from .engine import grade_module
from .i18n import _, ngettext
from .references import References
from .submission import Submission


def pytest_addoption(parser):
    group = parser.getgroup("attention-lab")
    group.addoption("--submission", default=None, help="package folder to grade")
    group.addoption("--ex", default="", help="comma-separated exercise modules to grade")
    group.addoption("--device", dest="grade_device", default="cpu", help="cpu or cuda")
    group.addoption("--results", default="build/results.json", help="results.json path")
    group.addoption(
        "--cpu-limit",
        type=float,
        default=None,
        help="CPU seconds every check may use (default: each check's calibrated limit)",
    )
    group.addoption(
        "--show-printed",
        action="store_true",
        help="show what the student's code printed under every check, not only failing ones",
    )
    group.addoption(
        "--all-hints",
        action="store_true",
        help="show every level of each failing check's hint ladder (make grade HINTS=all)",
    )
    group.addoption(
        "--include-slow",
        action="store_true",
        help="also run the slow checks (a training run; `make grade-train`)",
    )


class GradingPlugin:
    """Registered when pytest runs with --submission: grades each module once (probes in a
    forked worker, verdicts here; engine.grade_module), hands each graded test its Result,
    prints the table last and merges them into results.json and report.html."""

    def __init__(self, config: pytest.Config):
        self.submission = Submission(config.getoption("submission"))
        self.device: str = config.getoption("grade_device")
        self.results_path = Path(config.getoption("results"))
        self.modules: list[str] = [m for m in config.getoption("ex").split(",") if m]
        self.include_slow: bool = config.getoption("include_slow")
        self.references = References.public()
        limits.configure(cpu=config.getoption("cpu_limit"))
        self.selected: dict[str, list[Check]] = {}
        self.results: dict[str, Result] = {}
        self.left_out: list[Check] = []
        self.show_printed: bool = config.getoption("show_printed")
        self.outputs: dict[str, dict] = {}  # what the student's code returned, for the report
        self.all_hints: bool = config.getoption("all_hints")
        self.pool: worker.Pool | None = None  # every selected module's workers, started ahead

    def wanted(self, check: Check) -> bool:
        return (not self.modules or check.module in self.modules) and (
            self.include_slow or not check.slow
        )

    @pytest.hookimpl
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep, drop = [], []
        for item in items:
            check = _check_of(item)
            if check is None:
                continue
            if self.wanted(check):
                keep.append(item)
                self.selected.setdefault(check.module, []).append(check)
            else:
                drop.append(item)
                if check.slow and (not self.modules or check.module in self.modules):
                    self.left_out.append(check)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def grade(self, check: Check) -> Result:
        if check.id not in self.results:
            if self.pool is None:  # two modules' workers at a time, ahead of the verdicts
                seed = self.references.seed
                self.pool = worker.Pool(self.selected, self.submission, seed, self.device)
            checks = self.selected.get(check.module) or [check]
            graded = grade_module(
                checks,
                self.submission,
                self.references,
                self.device,
                outputs=self.outputs,
                pool=self.pool,
            )
            for result in graded:
                self.results[result.check_id] = result
        return self.results[check.id]

    def grade_quietly(self, modules: list[str]) -> list[Result]:
        """The fast checks of `modules`, not shown: the own dependencies that decide whether
        a selected module's checks wait (make grade EX=gpt with the student's own blocks)."""
        results = []
        for module in modules:
            checks = [c for c in registry.checks_of(module) if not c.slow]
            results += grade_module(checks, self.submission, self.references, self.device)
        return results

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """After pytest's own last line: the table is the last thing the student reads."""
        if self.pool is not None:
            self.pool.close()
        if not self.results:
            return
        # Checks that wait on an own dependency failing its checks (student copy: waiting.py)
        results = waiting.hold(ordered_results(self), self.submission, self.grade_quietly)
        title = _("Attention Lab: grading {folder} on {device} (torch {version})").format(
            folder=self.submission.path, device=self.device, version=torch.__version__
        )
        graded = dict.fromkeys(r.module for r in results)  # their checks not run: left out
        left_out = [c for m in graded for c in registry.checks_of(m) if c.id not in self.results]
        result_set = sinks.ResultSet(
            str(self.submission.path),
            results,
            title=title,
            folder=self.submission.path,
            left_out=left_out,
            show_printed=self.show_printed,
        )
        merged = sinks.MergedResults(self.results_path, full=not self.modules)
        # The hint ladder (build/hint-state.json), the table, the report's pictures, then
        # results.json and report.html merged with the modules graded earlier (sinks.py)
        sinks.publish(
            result_set,
            [
                sinks.HintState(self.submission.path, all_levels=self.all_hints),
                sinks.Table(),
                sinks.ReportSections(self.submission, self.references, self.outputs),
                merged,
            ],
        )
        published = merged.published
        assert published is not None
        lines = publish.summary_lines(published)  # the other modules results.json holds
        if lines:
            print("\n" + "\n".join(lines))
        print(_("Results for Gradescope: {path}").format(path=self.results_path))
        if published.report is not None:
            path = published.report
            print(_("Report with pictures (open it in a browser): {path}").format(path=path))
        else:
            print(_("Report: not written ({error})").format(error=published.report_error))
        for module in dict.fromkeys(r.module for r in results):
            own = self.submission.own_dependencies(module)
            if own:
                files = ", ".join(f"{m}.py" for m in own)
                note = ngettext(
                    "Note: {module}.py was graded with your own {files} (this copy of the kit "
                    "has no trusted stand-in for it): while it fails its own checks, the "
                    "checks of {module} that do not pass wait (WAIT) instead of costing points. "
                    "Official grading uses trusted stand-ins.",
                    "Note: {module}.py was graded with your own {files} (this copy of the kit "
                    "has no trusted stand-ins for them): while one of them fails its own "
                    "checks, the checks of {module} that do not pass wait (WAIT) instead of "
                    "costing points. Official grading uses trusted stand-ins.",
                    len(own),
                )
                print(note.format(module=module, files=files))

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config):
        """No progress letters for graded checks: the table is the report."""
        if report.nodeid.startswith("tests/graded/"):
            return report.outcome, "", ""
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        completed = exitstatus in (0, 1) and bool(self.results)
        broken = any(r.status == Status.ERROR for r in self.results.values())
        session.exitstatus = 0 if completed and not broken else (exitstatus or 3)


def _check_of(item: pytest.Item) -> Check | None:
    return getattr(getattr(item, "callspec", None), "params", {}).get("check")


_KEY = pytest.StashKey[GradingPlugin]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("submission"):
        plugin = GradingPlugin(config)
        config.stash[_KEY] = plugin
        config.pluginmanager.register(plugin, "attention-lab-grading")


@pytest.fixture(scope="session")
def grader(request: pytest.FixtureRequest) -> GradingPlugin:
    if _KEY not in request.config.stash:
        pytest.skip("graded suites run through `make grade` (pass --submission DIR)")
    return request.config.stash[_KEY]


def suite(module: str):
    """The graded test function for one exercise module: one test per check."""

    @pytest.mark.parametrize("check", registry.checks_of(module), ids=lambda c: c.slug)
    def test(check: Check, grader: GradingPlugin) -> None:
        result = grader.grade(check)
        if not result.passed:
            pytest.fail(f"[{result.misconception}] {result.message}", pytrace=False)

    test.__name__ = f"test_{module}"
    return test


def ordered_results(grader: GradingPlugin) -> list[Result]:
    order = {c.id: i for i, c in enumerate(registry.all_checks())}
    return sorted(grader.results.values(), key=lambda r: order[r.check_id])
