"""`make autograde`'s notebook kernels run confined (channels/nbgrader/kernel.py, the launcher
run/sandbox/kernel.py), without a kernel: what of the kit a kernel sees, and that autograde
fails closed where the machine cannot confine the kernels. The confined kernels themselves
run in test_nbgrader_attacks.py's one autograde run (attacks from inside the kernel)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from autograder.channels.cli import nbgrader_course
from autograder.channels.nbgrader import course
from autograder.channels.nbgrader import kernel as course_kernel
from autograder.core import course_config
from autograder.core.errors import UsageError
from autograder.core.settings import Settings
from autograder.run.sandbox import jail, view
from autograder.trusted import IN_STUDENT_COPY

MISSING = "cannot grade untrusted code safely on this machine; missing:\n  - a way to confine"


def test_the_kernels_view_of_the_kit_is_the_student_copy_and_the_stand_ins_it_imports():
    """gpt's kernel: what students have (the notebook runner, the data, the stubs) and the
    stand-ins of the modules gpt builds on (its release imports them); never solutions/,
    course/, the kit's tests, build/, .git, nor gpt's own stand-in."""
    files = course_kernel.kit_files("gpt")
    assert {"autograder/notebook.py", "data/corpus.txt", "assignments/gpt.py"} <= set(files)
    secret = ("solutions/", "course/", "tests/kit/", "build/", ".git/", "autograder/trusted/gpt.py")
    assert not [f for f in files if f.startswith(secret)]
    stand_ins = {
        Path(f).stem
        for f in files
        if f.startswith("autograder/trusted/") and not f.endswith("__init__.py")
    }
    assert stand_ins == set(IN_STUDENT_COPY) | set(view.depends_on("gpt"))


def _unavailable(*args, **kwargs):
    raise jail.SandboxUnavailable(MISSING)


def test_autograde_refuses_to_start_a_kernel_it_cannot_confine(tmp_path, monkeypatch):
    """No confinement (jail.detect refuses): no nbgrader run, no kernel; the command line
    says what is missing in one message (a usage error, exit status 2)."""
    course_config.write(tmp_path, ["attention"])
    monkeypatch.setattr(course_kernel, "detect", _unavailable)
    ran: list[tuple] = []
    monkeypatch.setattr(course, "nbgrader", lambda *a, **k: ran.append(a))
    with pytest.raises(jail.SandboxUnavailable):
        course.autograde(tmp_path)
    assert not ran
    args = argparse.Namespace(root=str(tmp_path), assignment=None, settings=Settings())
    with pytest.raises(UsageError, match="missing"):
        nbgrader_course.call(args, lambda module, root: module.autograde(root))


def test_insecure_runs_the_kernels_unconfined_and_says_so(tmp_path, monkeypatch):
    """--insecure where nothing confines: the kernels run as nbgrader starts them (no
    kernelspec of ours), and the run's first line says they were not confined, and why."""
    missing = ["a way to confine student code"]
    monkeypatch.setattr(
        course_kernel,
        "detect",
        lambda *a, **k: jail.Isolation("none", missing=missing, insecure=True),
    )
    with course_kernel.ConfinedKernels(tmp_path, Settings(insecure=True)) as kernels:
        env = {"IPYTHONDIR": "/somewhere"}
        assert kernels.prepare("attention", env) == (env, [])
        assert "NOT confined" in kernels.summary() and missing[0] in kernels.summary()
        stage = kernels.stage
    assert not stage.exists()
