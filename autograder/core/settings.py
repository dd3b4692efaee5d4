"""The settings of one run, resolved in one place and passed down.

A run's settings come from four sources. `Settings.resolve` reads them all, once, at the entry
point (cli.main, the pytest plugin's pytest_configure, gradescope-run, prairielearn-run,
batch, the nbgrader verbs, a notebook's test cell), and the entry point passes the object, or
the fields a callee needs, down. Nothing else in the package reads an ATTENTION_LAB_*
variable (a kit test, test_settings.py, greps for it).

Precedence, highest first:

    1. command-line flags        (`python -m autograder grade --device cuda`)
    2. make variables            arrive as command-line flags (`make grade WARM=0` passes
                                 `--warm 0`), so they rank with them
    3. the environment           the ATTENTION_LAB_* variables below
    4. course/course.toml        its optional [limits] section (course_config.py)
    5. the defaults              the field defaults of Settings

A flag left out (None) does not count as given: the next source decides.

Environment variables (ENV maps each to its field):

    ATTENTION_LAB_WARM             "1": `make grade` may use the warm grader (warm.py)
    ATTENTION_LAB_WARM_DIR         where the warm grader's socket, lock and log live (tests)
    ATTENTION_LAB_HINT_STATE       another path for the hint ladder's state (ladder.py; tests)
    ATTENTION_LAB_SANDBOX_MODE     "uid": grade as if this machine had no namespaces
    ATTENTION_LAB_INSECURE         "1": grade even without isolation (results say so)
    ATTENTION_LAB_TIMEOUT          seconds per submission, less CPU waits (sandbox.jail.Limits)
    ATTENTION_LAB_CHECK_TIMEOUT    CPU seconds per check, at most, in every channel (TimeLimits.cap)
    ATTENTION_LAB_MEMORY_MB        memory per submission, MiB (Limits.memory)
    ATTENTION_LAB_GRADESCOPE_ROOT  Gradescope's root (/autograder) for a simulated run
    ATTENTION_LAB_PL_ROOT          PrairieLearn's root (/grade) for a simulated run
    ATTENTION_LAB_HIDDEN           "outside": a notebook kernel leaves the hidden tier to
                                   `make autograde` (set by course.kernel_env for nbgrader)
    ATTENTION_LAB_HIDDEN_SEED      the seed of an in-kernel hidden run (instructors only)

Three more cross into processes that cannot import the kit yet, and are read there, not here:
ATTENTION_LAB_ROOT (a notebook's setup cell looks for the kit with it: course.SETUP),
ATTENTION_LAB_PYTHON and ATTENTION_LAB_VENV (Gradescope's and PrairieLearn's shell scripts).
Environment variables stay the transport where a setting crosses a process boundary (a
sandbox child, nbgrader's kernel); the process on the other side resolves them here.

This module imports nothing but the standard library: the warm grader's client resolves its
settings before importing anything else.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

# field -> environment variable
ENV: dict[str, str] = {
    "warm": "ATTENTION_LAB_WARM",
    "warm_dir": "ATTENTION_LAB_WARM_DIR",
    "hint_state": "ATTENTION_LAB_HINT_STATE",
    "sandbox_mode": "ATTENTION_LAB_SANDBOX_MODE",
    "insecure": "ATTENTION_LAB_INSECURE",
    "timeout": "ATTENTION_LAB_TIMEOUT",
    "check_timeout": "ATTENTION_LAB_CHECK_TIMEOUT",
    "memory_mb": "ATTENTION_LAB_MEMORY_MB",
    "gradescope_root": "ATTENTION_LAB_GRADESCOPE_ROOT",
    "prairielearn_root": "ATTENTION_LAB_PL_ROOT",
    "hidden": "ATTENTION_LAB_HIDDEN",
    "hidden_seed": "ATTENTION_LAB_HIDDEN_SEED",
}
# The names other modules write into a child's environment (they never read them).
HIDDEN_VAR = ENV["hidden"]
HIDDEN_SEED_VAR = ENV["hidden_seed"]
HINT_STATE_VAR = ENV["hint_state"]
KIT_ROOT_VAR = "ATTENTION_LAB_ROOT"  # read by the notebooks' setup cell only (course.SETUP)
# Not a setting: `make autograde` tells nbgrader's kernels each cell's CPU seconds through it
# (read by the kernel's startup file only: channels/nbgrader/course.CELL_CPU_LIMIT).
CELL_CPU_VAR = "ATTENTION_LAB_CELL_CPU_SECONDS"

# course.toml's [limits] keys -> fields (course_config.py validates the section)
COURSE_TOML: dict[str, str] = {
    "timeout": "timeout",
    "check_timeout": "check_timeout",
    "memory_mb": "memory_mb",
}

# command-line option (argparse dest) -> field, where the names differ
CLI_NAMES: dict[str, str] = {"ex": "modules", "lang": "language", "grade_device": "device"}

SANDBOX_MODES = ("", "uid")
HIDDEN_MODES = ("", "outside")


class SettingsError(ValueError):
    """A setting holds something unexpected: the message names the source and what was
    expected."""


@dataclass(frozen=True)
class Settings:
    """Every setting of one run. Build it with `Settings.resolve`; it never changes after."""

    # what to grade, where, and where the results go (make grade, watch, hint)
    submission: Path = Path("assignments")
    modules: tuple[str, ...] = ()  # () = every module
    device: str = "cpu"
    results: Path = Path("build/results.json")
    language: str = ""  # "" = the environment's (LANGUAGE, LC_ALL, ...: i18n.from_environment)
    # time: a fixed CPU limit per check (None: each check's calibrated limit, limits.py)
    cpu_limit: float | None = None
    # the warm grader (warm.py)
    warm: bool = False
    warm_dir: Path | None = None  # None: <kit>/build
    # the hint ladder's state (None: build/hint-state.json; ladder.py)
    hint_state: Path | None = None
    # the sandbox (sandbox/jail.py): "uid" lowers the isolation to uid mode; insecure grades
    # without isolation; the limits per submission (None: jail.Limits' defaults)
    sandbox_mode: str = ""
    insecure: bool = False
    timeout: float | None = None
    check_timeout: float | None = None  # a cap on every check's CPU seconds, in every channel
    memory_mb: float | None = None
    # the grading platforms' roots
    gradescope_root: Path = Path("/autograder")
    prairielearn_root: Path = Path("/grade")
    # a notebook kernel: "outside" leaves the hidden tier to make autograde; the seed of an
    # in-kernel hidden run
    hidden: str = ""
    hidden_seed: int | None = None

    @classmethod
    def resolve(
        cls,
        cli_args: argparse.Namespace | Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        course_toml: Path | Mapping[str, Any] | None = None,
    ) -> Settings:
        """The settings of a run: `cli_args` (flags, make variables among them: an argparse
        Namespace or {field: value}; None values are not given) over `environ` (default
        os.environ) over `course_toml` (a path to course.toml, or its parsed data; its
        [limits] section) over the defaults. Raises SettingsError on a malformed value."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for key, field_name in COURSE_TOML.items():
            value = _course_limits(course_toml).get(key)
            if value is not None:
                values[field_name] = _convert(field_name, value, f"course.toml [limits] {key}")
        for field_name, variable in ENV.items():
            text = environ.get(variable, "")
            if text.strip():
                values[field_name] = _convert(field_name, text.strip(), variable)
        for field_name, value in _cli_values(cli_args).items():
            values[field_name] = _convert(field_name, value, _flag(field_name))
        return cls(**values)

    def but(self, **changes: Any) -> Settings:
        """A copy with some fields changed (a verb that grades one module of several)."""
        return replace(self, **changes)


_FIELDS = {f.name for f in fields(Settings)}


def _cli_values(cli_args: argparse.Namespace | Mapping[str, Any] | None) -> dict[str, Any]:
    if cli_args is None:
        return {}
    given = vars(cli_args) if isinstance(cli_args, argparse.Namespace) else dict(cli_args)
    found: dict[str, Any] = {}
    for name, value in given.items():
        field_name = CLI_NAMES.get(name, name)
        if field_name in _FIELDS and value is not None:
            found[field_name] = value
    return found


def _flag(field_name: str) -> str:
    names = {v: k for k, v in CLI_NAMES.items()}
    return "--" + names.get(field_name, field_name).replace("_", "-")


def limits_toml(course_toml: Path) -> str:
    """course.toml's [limits] alone, as TOML ('' when it has none): what a grading platform's
    build (make gradescope, make prairielearn) ships as course/course.toml, so that the
    instructor's limits apply there as in every other channel, without the course's secret.
    Raises SettingsError on a malformed section."""
    limits = _course_limits(course_toml)
    for key, value in limits.items():
        _convert(COURSE_TOML[key], value, f"course.toml [limits] {key}")
    if not limits:
        return ""
    return "[limits]\n" + "".join(f"{key} = {float(limits[key])!r}\n" for key in sorted(limits))


def _course_limits(course_toml: Path | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if course_toml is None:
        return {}
    if isinstance(course_toml, Mapping):
        data: Mapping[str, Any] = course_toml
    else:
        path = Path(course_toml)
        if not path.is_file():
            return {}
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SettingsError(f"{path} could not be read: {e}") from None
    limits = data.get("limits", {})
    if not isinstance(limits, Mapping):
        raise SettingsError(f"course.toml: [limits] must be a table, got {limits!r}")
    unknown = sorted(set(limits) - set(COURSE_TOML))
    if unknown:
        raise SettingsError(
            f"course.toml: [limits] {unknown[0]} is not a setting; expected one of "
            f"{', '.join(COURSE_TOML)}"
        )
    return limits


def _convert(field_name: str, value: Any, source: str) -> Any:
    """`value` (a flag's, a variable's text, a TOML value) as the field's type, validated."""
    if field_name in ("warm", "insecure"):
        if isinstance(value, bool):
            return value
        text = str(value).strip()
        if text not in ("0", "1"):
            raise SettingsError(f"{source}={value!r}: expected 1 (on) or 0 (off)")
        return text == "1"
    if field_name in ("cpu_limit", "timeout", "check_timeout", "memory_mb"):
        try:
            number = float(value) if not isinstance(value, bool) else float("nan")
        except (TypeError, ValueError):
            number = float("nan")
        if not number > 0 or number == float("inf"):
            raise SettingsError(f"{source}={value!r}: expected a positive number")
        return number
    if field_name == "hidden_seed":
        try:
            return int(str(value).strip())
        except ValueError:
            raise SettingsError(f"{source}={value!r}: expected an integer seed") from None
    if field_name == "sandbox_mode":
        if value not in SANDBOX_MODES:
            raise SettingsError(f"{source}={value!r}: expected uid (or nothing)")
        return value
    if field_name == "hidden":
        if value not in HIDDEN_MODES:
            raise SettingsError(f"{source}={value!r}: expected outside (or nothing)")
        return value
    if field_name in ("submission", "results", "warm_dir", "hint_state"):
        return Path(value)
    if field_name in ("gradescope_root", "prairielearn_root"):
        return Path(value)
    if field_name == "modules":
        if isinstance(value, str):
            return tuple(m.strip() for m in value.split(",") if m.strip())
        return tuple(value)
    return str(value)


def device_flag(argv: list[str]) -> str:
    """The value of `--device` in a command line (`--device cuda` or `--device=cuda`), else
    "cpu": what every verb grades on unless told."""
    for i, arg in enumerate(argv):
        if arg == "--device" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--device="):
            return arg.split("=", 1)[1]
    return "cpu"


def hide_gpus_unless_cuda(device: str) -> None:
    """A run on the CPU hides the machine's GPUs from itself and from every process it starts
    (CUDA_VISIBLE_DEVICES empty), before anything has touched CUDA. Checks run in forks of the
    grading process, and a process that has touched CUDA cannot use CUDA or autograd in a
    fork of itself: torch's autograd counts the GPUs at its first backward pass and then
    refuses a backward pass in any fork, and torch.random.fork_rng() in a fork cannot
    re-initialise CUDA. On a machine with a GPU and torch's CUDA build, every check that
    trained, ran dropout or took a gradient crashed, even with --device cpu."""
    if not device.startswith("cuda"):
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    else:  # torch.cuda.is_available() by NVML: asking by CUDA would forbid CUDA in forks
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
