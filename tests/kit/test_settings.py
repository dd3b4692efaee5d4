"""One settings object (autograder/core/settings.py): every run setting resolved in one place, with
one precedence (flags, make variables among them, over the environment over course.toml over
the defaults), and no ATTENTION_LAB_* variable read anywhere else in the package."""

from __future__ import annotations

import argparse
import ast
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT

from autograder.core import course_config, settings
from autograder.core.settings import ENV, Settings, SettingsError
from autograder.run.limits import TimeLimits
from autograder.run.sandbox.jail import Limits

pytestmark = pytest.mark.fast

PACKAGE = ROOT / "autograder"


def test_flags_over_environment_over_course_toml_over_defaults(tmp_path):
    toml = {"limits": {"timeout": 50, "check_timeout": 6, "memory_mb": 1024}}
    environ = {"ATTENTION_LAB_TIMEOUT": "40", "ATTENTION_LAB_CHECK_TIMEOUT": "5"}
    cli = {"cpu_limit": 2.5, "check_timeout": None, "memory_mb": 900}  # None: not given
    s = Settings.resolve(cli_args=cli, environ=environ, course_toml=toml)
    assert s.cpu_limit == 2.5  # a flag
    assert s.memory_mb == 900.0  # flag over course.toml
    assert s.timeout == 40.0  # environment over course.toml
    assert s.check_timeout == 5.0  # environment, the flag left out
    assert Settings.resolve(environ={}, course_toml=toml).memory_mb == 1024.0  # over the default
    flag_over_environ = Settings.resolve(cli_args={"timeout": 30}, environ=environ)
    assert flag_over_environ.timeout == 30.0
    assert s.device == "cpu" and s.sandbox_mode == "" and not s.insecure  # defaults
    assert Settings.resolve(environ={}) == Settings()
    # course.toml as a file, as the sandboxed verbs read it
    path = tmp_path / "course.toml"
    path.write_text("[hidden]\nsecret = 'x'\n[limits]\ntimeout = 70\n")
    assert Settings.resolve(environ={}, course_toml=path).timeout == 70.0
    assert Settings.resolve(environ={}, course_toml=tmp_path / "missing.toml") == Settings()
    # the course's own reader accepts the section it validates
    assert course_config.load(tmp_path).secret == "x"


def test_make_variables_arrive_as_flags_and_win():
    """`make grade WARM=0` passes --warm 0: it wins over ATTENTION_LAB_WARM=1."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--warm", default=None)
    parser.add_argument("--ex", default="")
    parser.add_argument("--lang", default="")
    args = parser.parse_args(["--warm", "0", "--ex", "masks,gpt", "--lang", "zh_CN"])
    s = Settings.resolve(cli_args=args, environ={"ATTENTION_LAB_WARM": "1"})
    assert s.warm is False and s.modules == ("masks", "gpt") and s.language == "zh_CN"
    left_out = parser.parse_args([])
    assert Settings.resolve(cli_args=left_out, environ={"ATTENTION_LAB_WARM": "1"}).warm


def test_every_variable_resolves_to_its_field():
    environ = {
        "ATTENTION_LAB_WARM": "1",
        "ATTENTION_LAB_WARM_DIR": "/tmp/w",
        "ATTENTION_LAB_HINT_STATE": "/tmp/h.json",
        "ATTENTION_LAB_SANDBOX_MODE": "uid",
        "ATTENTION_LAB_INSECURE": "1",
        "ATTENTION_LAB_TIMEOUT": "6",
        "ATTENTION_LAB_CHECK_TIMEOUT": "1",
        "ATTENTION_LAB_MEMORY_MB": "512",
        "ATTENTION_LAB_GRADESCOPE_ROOT": "/tmp/gs",
        "ATTENTION_LAB_PL_ROOT": "/tmp/pl",
        "ATTENTION_LAB_HIDDEN": "outside",
        "ATTENTION_LAB_HIDDEN_SEED": "1234",
    }
    assert set(environ) == set(ENV.values())
    s = Settings.resolve(environ=environ)
    assert s == Settings(
        warm=True,
        warm_dir=Path("/tmp/w"),
        hint_state=Path("/tmp/h.json"),
        sandbox_mode="uid",
        insecure=True,
        timeout=6.0,
        check_timeout=1.0,
        memory_mb=512.0,
        gradescope_root=Path("/tmp/gs"),
        prairielearn_root=Path("/tmp/pl"),
        hidden="outside",
        hidden_seed=1234,
    )
    limits = Limits.of(s)
    assert (limits.timeout, limits.memory) == (6.0, 512 << 20)
    assert Limits.of(Settings()) == Limits()
    # a check's CPU seconds: the one rule of every channel (TimeLimits.of), capped at 1
    assert TimeLimits.of(s).cap == 1.0 and TimeLimits.of(Settings()).cap is None


@pytest.mark.parametrize(
    ("environ", "cli", "toml", "says"),
    [
        ({"ATTENTION_LAB_TIMEOUT": "soon"}, None, None, "ATTENTION_LAB_TIMEOUT='soon'"),
        ({"ATTENTION_LAB_MEMORY_MB": "-1"}, None, None, "positive"),
        ({"ATTENTION_LAB_WARM": "yes"}, None, None, "1 (on) or 0 (off)"),
        ({"ATTENTION_LAB_SANDBOX_MODE": "none"}, None, None, "uid"),
        ({"ATTENTION_LAB_HIDDEN_SEED": "x1"}, None, None, "integer"),
        ({}, {"cpu_limit": 0}, None, "--cpu-limit=0"),
        ({}, None, {"limits": {"timeout": "soon"}}, "course.toml [limits] timeout"),
        ({}, None, {"limits": {"threads": 2}}, "threads is not a setting"),
    ],
)
def test_a_malformed_setting_names_its_source(environ, cli, toml, says):
    with pytest.raises(SettingsError, match=re.escape(says)):
        Settings.resolve(cli_args=cli, environ=environ, course_toml=toml)


def _reads(tree: ast.AST):
    """(line, key expression) of every os.environ[...] / os.environ.get(...) / os.getenv(...)"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value).endswith("environ"):
                yield node.lineno, node.slice
        elif isinstance(node, ast.Call) and node.args:
            name = ast.unparse(node.func)
            if name.endswith(("environ.get", "environ.pop", "environ.setdefault", "getenv")):
                yield node.lineno, node.args[0]


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_no_attention_lab_variable_is_read_outside_settings():
    """Only settings.py reads the environment's ATTENTION_LAB_* variables: elsewhere no read of
    os.environ names one (whatever the key expression evaluates to in its module), and no
    code spells a variable's name (a docstring or a message may mention one)."""
    import importlib

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "autograder/core/settings.py" or "/locale/" in rel:
            continue
        tree = ast.parse(path.read_text())
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for line, key in _reads(tree):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                value = key.value
            else:
                try:
                    namespace = vars(importlib.import_module(name))
                    value = eval(compile(ast.Expression(key), rel, "eval"), namespace)  # noqa: S307
                except Exception:  # a local name: not knowable here, so not allowed
                    value = f"<{ast.unparse(key)}>"
            if not isinstance(value, str) or value.startswith(("ATTENTION_LAB_", "<")):
                found.append(f"{rel}:{line} reads {value}")
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docstrings and re.fullmatch(r"ATTENTION_LAB_\w+", node.value):
                    found.append(f"{rel}:{node.lineno} spells {node.value}")
    assert not found, found


def test_every_variable_the_kit_mentions_is_resolved_or_listed():
    """Each ATTENTION_LAB_* name in the package (code, scripts, docs in it) is a Settings
    variable, or one of the few read on the far side of a process boundary by something that
    cannot import the kit yet (settings.py's docstring lists them)."""
    elsewhere = {settings.KIT_ROOT_VAR, settings.CELL_CPU_VAR}
    elsewhere |= {"ATTENTION_LAB_PYTHON", "ATTENTION_LAB_VENV"}
    mentioned = set()
    for path in PACKAGE.rglob("*"):
        if path.is_file() and path.suffix in ("", ".py", ".sh") and "/locale/" not in str(path):
            mentioned |= set(re.findall(r"ATTENTION_LAB_[A-Z_]*[A-Z]", path.read_text()))
    assert mentioned - set(ENV.values()) - elsewhere == set()
    assert set(ENV.values()) <= mentioned  # each one is documented (settings.py) at least
    text = (PACKAGE / "core/settings.py").read_text()
    assert all(variable in text for variable in elsewhere)


@pytest.mark.parametrize(
    "argv, device",
    [
        (["grade", "--ex", "attention"], "cpu"),
        (["grade", "--device", "cuda"], "cuda"),
        (["--warm", "0", "grade", "--device=cuda:1"], "cuda:1"),
        (["batch", "--submissions", "subs"], "cpu"),
        (["grade", "--device"], "cpu"),  # no value: argparse refuses it later
    ],
)
def test_device_flag_reads_the_command_line(argv, device):
    assert settings.device_flag(argv) == device


def test_a_cpu_run_hides_the_gpus_and_a_cuda_run_counts_them_by_nvml(monkeypatch):
    """On a machine with a GPU and torch's CUDA build, a fork of a process that touched CUDA
    (autograd's first backward pass counts the GPUs) can neither use CUDA nor run a backward
    pass: a CPU grading hides the GPUs from itself and its processes, and a CUDA grading asks
    NVML, not CUDA, whether there is one (seen on an H200 machine: the solutions got 196 / 254
    on the CPU before, 254 / 254 after: tools/cuda_check.py)."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    settings.hide_gpus_unless_cuda("cuda")
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    assert os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    settings.hide_gpus_unless_cuda("cpu")
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_every_process_that_grades_on_the_cpu_hides_the_gpus():
    """The entry points call hide_gpus_unless_cuda before anything touches CUDA, and the
    sandbox (CPU only) starts its processes without a GPU."""
    main = (PACKAGE / "__main__.py").read_text()
    assert main.index("hide_gpus_unless_cuda(device_flag(") < main.index("from .run import warm")
    plugin = (PACKAGE / "plugin.py").read_text()
    assert "hide_gpus_unless_cuda(settings.device)" in plugin
    from autograder.run.sandbox.jail import SAFE_ENV

    assert SAFE_ENV["CUDA_VISIBLE_DEVICES"] == ""
