"""The grade does not depend on the student's machine: its locale, its terminal's encoding,
the pytest options its shell carries. Each was a crash or a lost point before."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT, SOLUTIONS, grade_cli, run_cli, submission_with, warm_grader
from test_pytest_first_class import run_pytest

# A machine whose locale is not UTF-8, on any machine: C without Python's locale coercion and
# UTF-8 mode (the same as a Latin-1 locale for these tests: the default encoding is ASCII).
NOT_UTF8 = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
SAYS = "weights α √ 你好"


def printing_attention() -> str:
    """The solution's attention.py, printing non-ASCII text from the graded function, with a
    comment in Chinese."""
    source = "# 注意力\n" + (SOLUTIONS / "attention.py").read_text()
    head = "def scaled_dot_product_attention"
    start = source.index(head)
    body = source.index('"""', source.index('"""', start) + 3) + 3  # after its docstring
    return f"{source[:body]}\n    print({SAYS!r})\n{source[body:]}"


def test_a_machine_whose_locale_is_not_utf8_grades_as_any_other(tmp_path, monkeypatch):
    """The worker wrote a student's print() in the locale's encoding (UnicodeEncodeError: 3 /
    20 for correct code), and the kit read its own files in it (batch: UnicodeDecodeError)."""
    folder = submission_with(tmp_path, {"attention": printing_attention()})
    for name, value in NOT_UTF8.items():
        monkeypatch.setenv(name, value)
    check = subprocess.run(
        [sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"],
        capture_output=True,
        text=True,
    )
    assert "utf" not in check.stdout.lower(), check.stdout  # the machine this test pretends

    # (a fresh process, as the first `make grade` on such a machine grades)
    proc, data = grade_cli(folder, tmp_path, "--ex", "attention", "--verbose", warm=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert data["score"] == data["max_score"] > 0, proc.stdout
    assert SAYS in proc.stdout  # --verbose shows what the code printed, as it printed it

    pytest_run, outcomes = run_pytest(tmp_path, folder)  # no `python -m autograder` here
    assert outcomes and all(o == "passed" for o, _ in outcomes.values()), pytest_run.stdout

    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "attention.py").write_text(printing_attention(), encoding="utf-8")
    out = tmp_path / "out"
    batch = run_cli("batch", "--submissions", str(subs), "--out", str(out), "--ex", "attention")
    assert batch.returncode == 0, batch.stderr[-3000:]
    results = json.loads((out / "alice" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == data["score"], results


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
def test_a_terminal_that_cannot_show_the_math_gets_ascii_not_a_crash(tmp_path, monkeypatch, warm):
    """The feedback writes √, ≠, ᵀ: on a terminal without them (PYTHONIOENCODING=ascii; a
    Latin-1 locale: the test below) make grade ended in a UnicodeEncodeError after grading.
    The warm grader (every `make grade` after the first) wrote UTF-8 whatever the terminal
    took: its fork now writes in the encodings its client found."""
    wrong = (SOLUTIONS / "attention.py").read_text().replace("/ math.sqrt(d_k)", "/ d_k")
    assert wrong != (SOLUTIONS / "attention.py").read_text()
    folder = submission_with(tmp_path, {"attention": wrong})
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    proc, data = grade_cli(folder, tmp_path, "--ex", "attention", warm=warm)
    if warm:  # graded by the warm grader's fork, not in the client
        log = (warm_grader() / "warm-grader.log").read_text()
        assert f"'--submission', '{folder}'" in log, log
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.isascii()
    assert "divided by 16 = d_k, but they should be divided\n" in proc.stdout
    assert "by sqrt d_k = 4" in proc.stdout and "scaled by 1/sqrt d_k" in proc.stdout
    assert 0 < data["score"] < data["max_score"]  # results.json keeps the Unicode
    assert "√d_k" in json.dumps(data, ensure_ascii=False) and "wrong-scale" in json.dumps(data)


@pytest.mark.parametrize("name", ["zh_CN.GBK", "en_US.ISO-8859-1"])
def test_a_terminal_in_another_codeset_reads_the_feedback_in_it(tmp_path, monkeypatch, name):
    """On a GBK or Latin-1 locale, make grade runs in UTF-8 mode (__main__) but writes the
    table in the locale's codeset: the Chinese feedback in GBK, √ as "sqrt" in Latin-1."""
    language, codeset = name.split(".")
    (tmp_path / "locales").mkdir()
    made = subprocess.run(
        ["localedef", "-i", language, "-f", codeset, str(tmp_path / "locales" / name)],
        capture_output=True,
        text=True,
    )  # a locale of that codeset, whatever this machine has installed
    if not (tmp_path / "locales" / name).is_dir():
        pytest.skip(f"localedef cannot make {name} here: {made.stderr.strip()[-200:]}")
    wrong = (SOLUTIONS / "attention.py").read_text().replace("/ math.sqrt(d_k)", "/ d_k")
    folder = submission_with(tmp_path, {"attention": wrong})
    monkeypatch.setenv("LOCPATH", str(tmp_path / "locales"))
    monkeypatch.setenv("LC_ALL", name)
    monkeypatch.delenv("PYTHONIOENCODING", raising=False)
    monkeypatch.delenv("PYTHONUTF8", raising=False)
    monkeypatch.delenv("LANGUAGE")  # the kit's tests set it (conftest.py): the locale decides
    args = ["grade", "--submission", str(folder), "--results", str(tmp_path / "r.json")]
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args, "--ex", "attention"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode(codeset, "replace")
    text = proc.stdout.decode(codeset)  # strict: every byte in the locale's codeset
    if language == "zh_CN":
        assert "总分：15 / 20" in text and "√d_k" in text, text
    else:
        assert "Total: 15 / 20" in text and "by sqrt d_k = 4" in text, text


def test_pytest_options_of_the_students_shell_change_no_grade(tmp_path, monkeypatch):
    """PYTEST_ADDOPTS set for a student's own projects: "-n" (xdist, not loaded by make grade)
    stopped the grading with a usage error; "-x", "--maxfail" and "--durations" changed it."""
    wrong = (SOLUTIONS / "masks.py").read_text().replace("diagonal=1", "diagonal=0")
    assert wrong != (SOLUTIONS / "masks.py").read_text()
    folder = submission_with(tmp_path, {"masks": wrong})
    (tmp_path / "plain").mkdir()
    (tmp_path / "shell").mkdir()
    plain, plain_data = grade_cli(folder, tmp_path / "plain", "--ex", "masks")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-n 2 -x --maxfail=1 --durations=3 -p no:terminal")
    shell, shell_data = grade_cli(folder, tmp_path / "shell", "--ex", "masks")
    assert shell.returncode == plain.returncode == 0, shell.stdout + shell.stderr
    assert _untimed(shell_data) == _untimed(plain_data)
    assert 0 < plain_data["score"] < plain_data["max_score"]
    assert shell.stdout.replace(str(tmp_path / "shell"), str(tmp_path / "plain")) == plain.stdout


def _untimed(data: dict) -> str:
    """results.json without its clock readings (graded_at)."""
    return re.sub(r'"graded_at": "[^"]*"', "", json.dumps(data, sort_keys=True))
