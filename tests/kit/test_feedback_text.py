"""What surrounds the table: the student's own prints, no pytest noise, plain grammar."""

from conftest import SOLUTIONS, grade_cli, submission_with

from autograder.core import check as core
from autograder.core.check import Result
from autograder.feedback import report


def _result(status, printed="", misconception=""):
    r = Result(
        check_id="masks.x",
        name="masks: a check",
        module="masks",
        points=1.0,
        score=1.0 if status == "passed" else 0.0,
        status=status,
        misconception=misconception,
        message="something is off" if misconception else "",
    )
    if printed:
        r.extra["printed"] = printed
    return r


def test_failing_checks_show_a_few_printed_lines_and_passing_ones_only_when_verbose():
    long = "".join(f"line {i} " + "x" * 200 + "\n" for i in range(20))
    results = [_result("failed", long, "wrong-values"), _result("passed", "hello\n")]
    text = report.table(results, "T")
    assert "Your code printed:" in text and "| line 0 " in text and "| line 5 " in text
    assert "| line 6 " not in text and "… (14 more lines)" in text
    assert max(len(line) for line in text.splitlines()) <= 92
    assert "hello" not in text
    assert "| hello" in report.table(results, "T", show_printed=True)


def test_grammar_of_the_summary_and_of_the_value_message():
    assert "(1 check to fix)" in report.table([_result("failed", "", "x")], "T")
    assert "(2 checks to fix)" in report.table([_result("failed", "", "x")] * 2, "T")
    mixed = [_result("failed", "", "x"), _result("not attempted", "", "not-attempted")] * 2
    assert "(2 checks to fix, 2 checks not attempted)" in report.table(mixed, "T")
    assert "(1 check not attempted)" in report.table([_result("not attempted", "", "n")], "T")
    message = core.Failure(
        core.WRONG_VALUES, what="the weights", err=1.0, index=(0,), got=1.0, want=0.0
    ).message
    assert message.startswith("The values of the weights differ from the reference")


def test_import_error_hint_names_the_kits_interpreter():
    hint = core.Failure(core.IMPORT_ERROR, package="assignments", module="attention").hint
    assert ".venv/bin/python -c 'import assignments.attention'" in hint
    assert "`python -c" not in hint


def test_make_grade_prints_the_table_first_and_the_students_output(tmp_path):
    masks = (SOLUTIONS / "masks.py").read_text()
    noisy = masks.replace(
        "    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)",
        '    print(f"my causal_mask, L = {L}")\n'
        "    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=0)",
    ).replace(
        "    lengths = torch.as_tensor(lengths)\n",
        '    lengths = torch.as_tensor(lengths)\n    print("padding here")\n',
    )
    assert noisy.count("print(") == 2
    folder = submission_with(tmp_path, {"masks": noisy})
    proc, data = grade_cli(folder, tmp_path, "--ex", "masks")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert out.lstrip().startswith("Attention Lab: grading"), out[:300]
    assert "FFF" not in out and " failed in " not in out and "deselected" not in out
    assert "[causal-blocks-diagonal]" in out and "| my causal_mask, L = 1" in out
    assert "padding here" not in out  # a passing check's prints only with --verbose
    assert (tmp_path / "report.html").is_file() and "Report with pictures" in out
    proc, _ = grade_cli(folder, tmp_path, "--ex", "masks", "--verbose")
    assert "| padding here" in proc.stdout
