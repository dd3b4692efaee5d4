"""The graded suites' pytest plugin: one pytest item per check, and make grade's table.

`pytest tests/graded/test_attention.py [--submission DIR]` is an ordinary pytest run (the
suites' conftest.py loads this plugin; the submission defaults to assignments/): one item per
check, named by the check's slug (`test_attention[scale]`: `-k scale` selects it). A check
that loses points fails its item with the misconception's message and hints as the failure
text (no traceback); an exercise not attempted yet (its stub still raises
NotImplementedError) is skipped, a check that waits on the student's own failing dependency
(waiting.py) is xfailed, an advice note (a 0-point check that did not pass) passes with a
warning. -k, -x and --lf work as everywhere; each selected module is graded once (probes in a
forked worker with CPU-time limits, verdicts in this process: engine.grade_module), when its
first item runs. pytest's exit code is its own, and a plain run writes nothing (no
results.json, no hint-ladder state: its failures show hint levels 1 and 2, --all-hints all).

`make grade` (cli/grade.py) runs the same items with one more plugin, GradeTable, passed to
pytest.main: it takes each check's Result from the test reports (pytest_runtest_logreport),
leaves pytest's per-item letters out (pytest_report_teststatus; -qq --tb=no -rN keep the rest
of pytest's report out), and at pytest_terminal_summary prints the per-exercise table, moves
the hint ladder and merges the modules graded into Gradescope's results.json and the HTML
report (publish.py: each module graded so far, at its latest). make grade's exit status (0
whenever grading completed, whatever the score) is the CLI's, read from GradeTable.completed.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from .core import paths, registry
from .core.check import Check, Result, Status
from .core.i18n import _, message, ngettext
from .core.i18n import title as check_title
from .core.paths import ASSIGNMENTS
from .core.references import References
from .core.settings import Settings, SettingsError, hide_gpus_unless_cuda
from .feedback import ladder, publish, report, sinks
from .run import waiting, worker
from .run.engine import grade_module
from .run.submission import Submission


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attention-lab")
    if group.options:  # loaded twice (`-p autograder.plugin` and the suites' conftest.py)
        return
    group.addoption(
        "--submission", default=None, help="package folder to grade (default: assignments/)"
    )
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
        "--check-timeout",
        type=float,
        default=None,
        help="CPU seconds no check may exceed (default: course/course.toml's [limits], else "
        "no cap; the same in every channel)",
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
    """Registered for every run of the graded suites: grades each selected module once,
    when its first item runs (probes in a forked worker, verdicts here;
    engine.grade_module), and turns each check's Result into its item's outcome."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.settings = settings
        self.submission = Submission(settings.submission)
        self.device: str = settings.device
        self.results_path = settings.results
        self.modules: list[str] = list(settings.modules)
        self.include_slow: bool = config.getoption("include_slow")
        self.references = References.public()
        self.limits = self.references.time_limits(settings)  # TimeLimits.of: every channel's rule
        self.selected: dict[str, list[Check]] = {}
        self.results: dict[str, Result] = {}
        self.show_printed: bool = config.getoption("show_printed")
        self.outputs: dict[str, dict] = {}  # what the student's code returned, for the report
        self.all_hints: bool = config.getoption("all_hints")
        self.pool: worker.Pool | None = None  # every selected module's workers, started ahead
        self.graded: dict[str, list[Result]] = {}  # each module's results as judged
        self.quiet: dict[str, list[Result]] = {}  # own dependencies graded only to decide WAIT
        self.reporting = False  # GradeTable reports (make grade): no warnings for notes

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
                keep.append(item)
                continue
            if self.wanted(check):
                keep.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """What is graded: the items left after every selection (-k, --lf, --ex, ...)."""
        for item in session.items:
            check = _check_of(item)
            if check is not None:
                self.selected.setdefault(check.module, []).append(check)

    def grade(self, check: Check) -> Result:
        """`check`'s Result; the first call for a module grades the module's selected checks
        (and its selected own dependencies first: their results decide what waits)."""
        if check.id not in self.results:
            self._grade(check.module, check)
        return self.results[check.id]

    def _grade(self, module: str, check: Check | None = None) -> None:
        if module in self.graded:
            return
        self.graded[module] = []  # a cycle of own dependencies stops here
        deps = waiting.closure(self.submission, module)
        for dep in deps:
            if dep in self.selected:
                self._grade(dep)
        if self.pool is None:  # two modules' workers at a time, ahead of the verdicts
            seed = self.references.seed
            self.pool = worker.Pool(
                self.selected, self.submission, seed, self.device, limits=self.limits
            )
        checks = self.selected.get(module) or ([check] if check else [])
        graded = grade_module(
            checks,
            self.submission,
            self.references,
            self.device,
            outputs=self.outputs,
            pool=self.pool,
            limits=self.limits,
        )
        self.graded[module] = graded
        # Checks that wait on an own dependency failing its checks (student copy: waiting.py)
        known = [r for dep in deps for r in self.graded.get(dep, [])]
        for result in waiting.hold(known + graded, self.submission, self.grade_quietly):
            if result.module == module:
                self.results[result.check_id] = result

    def grade_quietly(self, modules: list[str]) -> list[Result]:
        """The fast checks of `modules`, not shown: the own dependencies that decide whether
        a selected module's checks wait (make grade EX=gpt with the student's own blocks)."""
        results = []
        for module in modules:
            if module not in self.quiet:
                checks = [c for c in registry.checks_of(module) if not c.slow]
                self.quiet[module] = grade_module(
                    checks, self.submission, self.references, self.device, limits=self.limits
                )
            results += self.quiet[module]
        return results

    def judge(self, check: Check, item: pytest.Item) -> None:
        """Grade `check` and end its item the pytest way: return (passed), pytest.fail with
        the feedback (lost points), pytest.skip (not attempted), pytest.xfail (waits on an
        own dependency); an advice note passes with a warning."""
        result = self.grade(check)
        item.stash[_RESULT] = result
        printed = result.extra.get("printed", "")
        if printed:  # what the student's code printed, as pytest shows a test's own output
            item.add_report_section("call", "stdout", printed)
        if result.passed:
            return
        if result.status == Status.NOT_ATTEMPTED:
            pytest.skip(message(result))
        if result.status == Status.WAITING:
            pytest.xfail(waiting.text(result))
        hints: report.Hints = ladder.ALL_LEVELS if self.all_hints else ladder.FRESH_LEVELS
        if result.note:
            if not self.reporting:
                note = AdviceNote(feedback(result, hints))
                warnings.warn_explicit(note, AdviceNote, str(item.path), _suite_line(item))
            return
        pytest.fail(feedback(result, hints), pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        """The check's Result travels with its call report (GradeTable reads it there)."""
        test_report = yield
        if call.when == "call" and _RESULT in item.stash:
            test_report.check_result = item.stash[_RESULT]
            if test_report.skipped and isinstance(test_report.longrepr, tuple):
                # "SKIPPED [10] tests/graded/test_attention.py:5: ... not attempted yet", not
                # the line of this file where the suite's test function raised it
                reason = test_report.longrepr[2]
                test_report.longrepr = (os.fspath(item.path), _suite_line(item), reason)
        return test_report

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.pool is not None:  # -x, Ctrl-C: stop the workers still running
            self.pool.close()
            self.pool = None

    def finish(self, results: list[Result]) -> None:
        """make grade's after-grading (GradeTable, at pytest's terminal summary): the table
        last, the hint ladder, results.json and report.html."""
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
                sinks.HintState(
                    self.submission.path,
                    all_levels=self.all_hints,
                    state=self.settings.hint_state,
                ),
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


class AdviceNote(UserWarning):
    """An advice note (a 0-point check that did not pass) in a plain pytest run."""


class GradeTable:
    """make grade's report, a pytest plugin that cli/grade.py passes to pytest.main: each
    check's Result from its test report, no per-item letters, and at the terminal summary
    the table, results.json and report.html (GradingPlugin.finish). `completed`: grading ran
    to its end with no error of the grader's own (make grade then exits 0, whatever the
    score)."""

    def __init__(self) -> None:
        self.results: list[Result] = []
        self.completed = False

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        if _KEY in config.stash:
            config.stash[_KEY].reporting = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config):
        """No progress letters for graded checks: the table is the report."""
        if _KEY in config.stash and report.nodeid.startswith("tests/graded/"):
            return report.outcome, "", ""
        return None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = getattr(report, "check_result", None)
        if isinstance(result, Result):
            self.results.append(result)

    @pytest.hookimpl
    def pytest_terminal_summary(
        self, terminalreporter, exitstatus: int, config: pytest.Config
    ) -> None:
        """After pytest's own last line: the table is the last thing the student reads."""
        if not self.results or _KEY not in config.stash:
            return
        config.stash[_KEY].finish(in_course_order(self.results))
        ran = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        self.completed = ran and not any(r.status == Status.ERROR for r in self.results)


def feedback(result: Result, hints: report.Hints) -> str:
    """A lost check's failure text in a plain pytest run: the misconception's message first
    (pytest's short summary shows the first line), the hint levels `hints` gives
    (report.Hints), then the check's title and points."""
    label = f"[{result.misconception}] " if result.misconception else ""
    points = f"{result.score:g}/{result.points:g}"
    lines = [label + message(result), *report.hints_of(result, hints)]
    return "\n".join([*lines, f"{check_title(result.name)} ({points})"])


def _suite_line(item: pytest.Item) -> int:
    """The line of the graded suite's file that makes its test (`test_x = suite("x")`)."""
    name = getattr(item, "originalname", item.name)
    try:
        lines = item.path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 1
    return next((n for n, line in enumerate(lines, 1) if line.startswith(f"{name} =")), 1)


def _check_of(item: pytest.Item) -> Check | None:
    return getattr(getattr(item, "callspec", None), "params", {}).get("check")


_KEY = pytest.StashKey[GradingPlugin]()
_RESULT = pytest.StashKey[Result]()


def pytest_configure(config: pytest.Config) -> None:
    """The plugin's entry point: the run's settings are resolved here, once (its options,
    which `make grade` passes as flags, over the environment: settings.py)."""
    if _KEY in config.stash:  # loaded twice (`-p autograder.plugin` and conftest.py)
        return
    folder = config.getoption("submission")
    if folder is not None and not Path(folder).is_dir():
        raise pytest.UsageError(
            f"--submission {folder!r} is not a folder; expected a folder holding the "
            "exercise modules (attention.py, masks.py, ...)"
        )
    options = {
        "submission": folder or str(ASSIGNMENTS),
        "modules": config.getoption("ex"),
        "device": config.getoption("grade_device"),
        "results": config.getoption("results"),
        "cpu_limit": config.getoption("cpu_limit"),
        "check_timeout": config.getoption("check_timeout"),
    }
    try:
        settings = resolve(options)
    except SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    hide_gpus_unless_cuda(settings.device)  # `pytest tests/graded/...` on a GPU machine
    plugin = GradingPlugin(config, settings)
    config.stash[_KEY] = plugin
    config.pluginmanager.register(plugin, "attention-lab-grading")


def resolve(options: Mapping[str, Any]) -> Settings:
    """The run's settings: the plugin's options (make grade passes its flags: cli/grade.py)
    over the environment over course/course.toml's [limits], as in every channel (cli.settings_of;
    the time limits: limits.TimeLimits.of)."""
    return Settings.resolve(cli_args=options, environ=os.environ, course_toml=paths.COURSE_TOML)


@pytest.fixture(scope="session")
def grader(request: pytest.FixtureRequest) -> GradingPlugin:
    if _KEY not in request.config.stash:
        pytest.skip("graded suites run with the grading plugin (tests/graded/conftest.py)")
    return request.config.stash[_KEY]


def suite(module: str):
    """The graded test function for one exercise module: one test per check."""

    @pytest.mark.parametrize("check", registry.checks_of(module), ids=lambda c: c.slug)
    def test(check: Check, grader: GradingPlugin, request: pytest.FixtureRequest) -> None:
        grader.judge(check, request.node)

    test.__name__ = f"test_{module}"
    return test


def in_course_order(results: list[Result]) -> list[Result]:
    order = {c.id: i for i, c in enumerate(registry.all_checks())}
    return sorted(results, key=lambda r: order[r.check_id])
