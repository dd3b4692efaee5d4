"""The same limits in every channel (issue 25, DESIGN principle 13): a check's CPU seconds
follow one rule (limits.TimeLimits.of the run's settings, resolved once at the entry point),
so a submission whose check sits near its limit gets the same verdict from make grade, make
watch, make hint, make batch, Gradescope, PrairieLearn and nbgrader's autograde; and a
course.toml [limits] override reaches all of them alike."""

from __future__ import annotations

import ast
import math
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

from autograder import plugin
from autograder.channels import cli
from autograder.channels.cli import grade
from autograder.core import course_config, paths, registry
from autograder.core.references import References
from autograder.core.settings import ENV, Settings, limits_toml
from autograder.run import policy
from autograder.run.limits import FACTOR, TimeLimits
from autograder.run.sandbox.runner import Sandbox

pytestmark = pytest.mark.fast


def _channels(course: Path) -> dict[str, list[str]]:
    """Each channel's command line (as the Makefile and the platforms' scripts call it)."""
    return {
        "make grade": ["grade"],
        "make watch": ["watch"],
        "make hint": ["hint", "--ex", "masks"],
        "make batch": ["batch", "--submissions", "x"],
        "gradescope-run": ["gradescope-run"],
        "prairielearn-run": ["prairielearn-run"],
        "make autograde": ["autograde", "--root", str(course)],
        "make regrade": ["regrade", "--root", str(course), "--student", "s"],
    }


def _settings(course: Path) -> dict[str, Settings]:
    """The settings each channel grades under, resolved as its entry point resolves them
    (the flags, os.environ, the course's course.toml)."""
    parser = cli.parser()
    found = {}
    for channel, argv in _channels(course).items():
        found[channel] = cli.settings_of(parser.parse_args(argv))
    # make grade hands the time limits to the pytest plugin as flags; a plain
    # `pytest tests/graded/...` passes none: the plugin resolves course.toml itself
    flags = grade.limit_flags(found["make grade"])
    names = [f.removeprefix("--").replace("-", "_") for f in flags[::2]]
    options = dict(zip(names, flags[1::2], strict=True))
    found["make grade (plugin)"] = plugin.resolve(options)
    found["pytest tests/graded"] = plugin.resolve({})
    return found


class _SandboxAt:
    """What Sandbox.cpu_limit reads of a sandbox: the run's TimeLimits and the references'
    CPU seconds of the submission it grades (no zygote, no isolation needed to ask)."""

    def __init__(self, time: TimeLimits, reference: dict[str, float]):
        self.time, self.reference = time, reference

    def _state(self):
        return (1, {}, {}, self.reference)


@pytest.fixture(scope="module")
def references() -> References:
    refs = References.public()
    for module in registry.modules():
        refs.module(module)
    return refs


def _limits_everywhere(settings: dict[str, Settings], refs: References) -> dict[str, dict]:
    """{channel: {check id: CPU seconds}}, through each placement a channel grades with."""
    checks = registry.all_checks()
    found = {}
    for channel, s in settings.items():
        limits = refs.time_limits(s)  # the plugin, the engine (hint), make watch
        worker = {c.id: policy.cpu_limit(c, limits) for c in checks}
        sandbox = _SandboxAt(TimeLimits.of(s), refs.cpu)  # batch, Gradescope, PL, autograde
        confined = {c.id: Sandbox.cpu_limit(sandbox, c) for c in checks}  # type: ignore[arg-type]
        assert worker == confined, f"{channel}: the worker and the sandbox disagree"
        found[channel] = worker
    return found


def test_every_channel_gives_every_check_the_same_cpu_seconds(tmp_path, monkeypatch, references):
    course = tmp_path / "course"
    course.mkdir()
    monkeypatch.setattr(paths, "COURSE_TOML", course / course_config.FILE)
    for field in ("check_timeout", "timeout", "memory_mb"):
        monkeypatch.delenv(ENV[field], raising=False)
    checks = registry.all_checks()

    # no course.toml, no environment: each check's calibrated limit, in every channel
    found = _limits_everywhere(_settings(course), references)
    first = next(iter(found.values()))
    for channel, limits in found.items():
        assert limits == first, f"{channel} differs from {next(iter(found))}"
    for check in checks:
        ref = references.cpu.get(check.id)
        assert first[check.id] == (max(check.timeout, FACTOR * ref) if ref else check.timeout)
        assert math.isfinite(first[check.id])  # an endless loop costs bounded time everywhere

    # the instructor's course.toml [limits]: one cap, in every channel alike
    cap = min(first.values()) / 2
    (course / course_config.FILE).write_text(f"[limits]\ncheck_timeout = {cap}\n")
    found = _limits_everywhere(_settings(course), references)
    for channel, limits in found.items():
        assert limits == {c.id: min(first[c.id], cap) for c in checks}, channel

    # the environment over course.toml, alike too
    monkeypatch.setenv(ENV["check_timeout"], str(cap / 2))
    found = _limits_everywhere(_settings(course), references)
    for channel, limits in found.items():
        assert set(limits.values()) == {cap / 2}, channel


def test_the_platforms_builds_carry_the_course_limits_without_its_secret(tmp_path):
    """make gradescope and make prairielearn ship course.toml's [limits] alone, where
    gradescope-run and prairielearn-run resolve them (course/course.toml of the shipped kit)."""
    course = tmp_path / course_config.FILE
    course.write_text('[hidden]\nsecret = "s3cret"\n\n[limits]\ncheck_timeout = 7\ntimeout = 50\n')
    shipped = limits_toml(course)
    assert "s3cret" not in shipped and "[hidden]" not in shipped
    here = Settings.resolve(environ={}, course_toml=course)
    there = Settings.resolve(environ={}, course_toml=tomllib.loads(shipped))
    assert (there.check_timeout, there.timeout) == (here.check_timeout, here.timeout) == (7, 50)
    assert limits_toml(tmp_path / "none.toml") == ""


def test_every_sandbox_a_channel_starts_takes_the_runs_time_limits():
    """The official channels build their Sandbox with the run's TimeLimits (TimeLimits.of its
    settings), never with a cap of their own."""
    channels = ROOT / "autograder" / "channels"
    calls = 0
    for path in sorted(channels.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "id", "") in ("Sandbox", "factory"):
                calls += 1
                keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
                assert "time_limits" in keywords, f"{path.name}: Sandbox(...) without time_limits"
                assert keywords["time_limits"].startswith("TimeLimits.of("), (path.name, keywords)
    assert calls >= 4  # batch, Gradescope, PrairieLearn, nbgrader's autograde
